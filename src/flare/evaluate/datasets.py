"""Evaluation datasets: questions with gold answers over a passage pool, and a cached index (E1).

A dataset is a folder holding ``questions.jsonl`` and ``corpus.jsonl`` (the format of the
``shared/data/<name>`` folders beside the checkout, see their README). :func:`load_dataset`
accepts a folder path, or a name looked up under :func:`data_root`: ``$FLARE_DATA`` when set,
else ``../shared/data`` next to a source checkout. The pool is indexed once into ``<cache>/<name>-<fingerprint>``
and reused; the fingerprint changes when the corpus file does, so a stale index is never used.

Example::

    ds = load_dataset("2wikimultihopqa")
    examples = ds.select(limit=20, offset=0)
    retriever = ds.retriever(Path(".flare/indexes"))
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flare.errors import InputError

if TYPE_CHECKING:
    from flare.retrieve.tantivy_index import TantivyRetriever

DATA_ROOT_ENV = "FLARE_DATA"
DEFAULT_INDEX_CACHE = Path(".flare/indexes")


@dataclass(frozen=True, slots=True)
class Example:
    """One question with everything needed to score an answer to it."""

    id: str
    question: str
    answers: tuple[str, ...]  # acceptable answers; ASQA: long-form references
    supporting_ids: tuple[str, ...] = ()
    type: str | None = None
    qa_pairs: tuple[tuple[str, tuple[str, ...]], ...] = ()  # ASQA: (question, short answers)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Dataset:
    """A dataset folder: its name, examples (in file order) and corpus file."""

    name: str
    folder: Path
    examples: tuple[Example, ...]

    @property
    def corpus_path(self) -> Path:
        return self.folder / "corpus.jsonl"

    def select(
        self, *, limit: int | None = None, offset: int = 0, seed: int | None = None, split: str | None = None
    ) -> list[Example]:
        """A reproducible slice: file order (or shuffled with ``seed``), from ``offset``, ``limit`` long.

        ``split`` keeps only the questions whose ``split`` field has that value (e.g. ``dev``). An
        offset past the last question is an :class:`InputError`: it would select nothing.
        """
        items = [e for e in self.examples if split is None or e.extra.get("split") == split]
        if split is not None and not items:
            raise InputError(f"no question of {self.name} is in split {split!r}",
                             "use a value of the questions' split field, e.g. dev or test")
        if offset >= len(items):
            within = f" in split {split!r}" if split is not None else ""
            raise InputError(f"--offset {offset} is past the last question: {self.name} has {len(items)}{within}",
                             f"give an offset below {len(items)}")
        if seed is not None:
            random.Random(seed).shuffle(items)
        end = None if limit is None else offset + limit
        return items[offset:end]

    def retriever(self, cache_dir: Path = DEFAULT_INDEX_CACHE, *, progress: bool = False) -> TantivyRetriever:
        """A BM25 retriever over the pool, building the index on first use only."""
        from flare.retrieve.corpus import load_corpus
        from flare.retrieve.tantivy_index import TantivyRetriever, build_index

        target = Path(cache_dir) / f"{self.name}-{self.fingerprint()}"
        if not target.exists():  # build_index renames a finished index into place: no half builds
            build_index(load_corpus(self.corpus_path), target, progress=progress)
        return TantivyRetriever(target)

    def metadata(self) -> dict[str, dict[str, Any]]:
        """Each corpus document's metadata by id, read from the corpus file itself (not the index)."""
        from flare.retrieve.corpus import read_documents

        return {d.id: dict(d.meta) for d in read_documents(self.corpus_path)}

    def fingerprint(self) -> str:
        """Short hash of the corpus file's path, size and modification time, and the analyzer."""
        from flare.retrieve.analyzers import ANALYZER_NAME

        st = self.corpus_path.stat()
        key = f"{self.corpus_path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{ANALYZER_NAME}"
        return hashlib.sha256(key.encode()).hexdigest()[:10]


def data_root() -> Path | None:
    """Where dataset names are looked up: ``$FLARE_DATA``, else ``shared/data`` beside the checkout.

    The second is ``<checkout>/../shared/data`` for a source checkout (``src/flare/...`` under a
    folder with ``pyproject.toml``); an installed package has no checkout, hence ``None``.
    """
    env = os.environ.get(DATA_ROOT_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / "pyproject.toml").is_file() and (checkout / "src" / "flare").is_dir():
        return checkout.parent / "shared" / "data"
    return None


def dataset_dir(name_or_path: str | Path) -> Path:
    """The folder of a dataset given by folder path or by name (see :func:`data_root`)."""
    folder = Path(name_or_path).expanduser()
    if (folder / "questions.jsonl").exists():
        return folder
    root = data_root()
    where = f"looked in {folder}" + (f" and {root / str(name_or_path)}" if root else "")
    if root is not None and (root / str(name_or_path) / "questions.jsonl").exists():
        return root / str(name_or_path)
    raise InputError(
        f"no dataset {str(name_or_path)!r} ({where})",
        f"give a folder with questions.jsonl and corpus.jsonl, or set {DATA_ROOT_ENV} to the folder "
        "that holds the named datasets (e.g. FLARE_DATA=../shared/data)",
    )


def load_dataset(name_or_path: str | Path) -> Dataset:
    """Load a dataset by folder path or by name under :func:`data_root` (``$FLARE_DATA``)."""
    folder = dataset_dir(name_or_path)
    if not (folder / "corpus.jsonl").exists():
        raise InputError(f"{folder} has questions.jsonl but no corpus.jsonl", "add the passage pool as corpus.jsonl")
    return Dataset(folder.name, folder, tuple(read_examples(folder / "questions.jsonl")))


def read_examples(path: Path) -> list[Example]:
    """Parse ``questions.jsonl``; a malformed line raises :class:`InputError` naming the line."""
    out: list[Example] = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                out.append(_example(row))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                hint = "each line needs id, question, answers"
                raise InputError(f"{path}:{n}: bad question record ({exc})", hint) from exc
    return out


def _example(row: dict[str, Any]) -> Example:
    answers = row["answers"]
    if isinstance(answers, str):
        answers = [answers]
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise ValueError("answers must be a list of strings")
    pairs = tuple(
        (str(p.get("question", "")), tuple(str(a) for a in p.get("short_answers", [])))
        for p in row.get("qa_pairs") or []
    )
    known = {"id", "question", "answers", "supporting_ids", "type", "qa_pairs"}
    return Example(
        id=str(row["id"]),
        question=str(row["question"]),
        answers=tuple(answers),
        supporting_ids=tuple(str(i) for i in row.get("supporting_ids") or []),
        type=row.get("type"),
        qa_pairs=pairs,
        extra={k: v for k, v in row.items() if k not in known},
    )


def doc_id(passage_id: str) -> str:
    """The corpus document a passage came from: chunking names passages ``<doc id>#<n>``."""
    return passage_id.split("#", 1)[0]
