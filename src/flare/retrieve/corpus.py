"""Read a corpus from disk, check it, and cut long documents into passages.

Two inputs are accepted:

* a folder of ``.txt`` / ``.md`` files, searched recursively (hidden files and folders are
  skipped); the id is the path relative to the folder, the title the first markdown heading or
  else the file stem;
* a ``.jsonl`` file, one JSON object per line with ``id``, ``text``, optional ``title`` and
  optional ``meta`` (a dict of strings, numbers, booleans, or lists of one of those).

Long documents are cut into passages of about ``max_words`` words (a Han character counts as
2/3 of a word, so 100 words is about 150 Chinese characters), at sentence ends where possible,
with ids ``docid#0``, ``docid#1`` …; a document short enough keeps its id. Sentence ends are
those of :mod:`flare.text.sentences`, the same the generator stops at.

Every problem raises :class:`~flare.errors.InputError` with the file and line in its message,
because a corpus that loads with silent gaps would give answers that look grounded and are not.

Example::

    passages = load_corpus("docs/")          # or "corpus.jsonl"
    build_index(passages, Path("index/"))
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from flare.errors import InputError, one_line
from flare.text import HAN, sentence_ends
from flare.types import Passage

MAX_WORDS = 100
"""Target passage size; the FLARE paper retrieves ~100-word Wikipedia passages."""

TEXT_SUFFIXES = (".txt", ".md", ".markdown")
_I64 = (-(2**63), 2**63 - 1)
_HINT_META = "meta values must be strings, numbers, booleans, or lists of one of those"

_SURROGATE = re.compile(r"[\ud800-\udfff]")  # from "\udfff" escapes in JSON: no index can store one

ScalarType = Literal["int", "float", "str", "bool"]
_SCALAR_TYPES: dict[type, ScalarType] = {int: "int", float: "float", str: "str", bool: "bool"}


@dataclass(frozen=True, slots=True)
class MetaKind:
    """The type of one metadata field: its scalar type and whether it holds a list."""

    type: ScalarType
    is_list: bool = False

    def __str__(self) -> str:
        return f"list[{self.type}]" if self.is_list else self.type


class MetaSchema:
    """Collects the type of every metadata field and rejects values that do not fit.

    A field must keep one type across the whole corpus (tantivy gives each field one typed
    column, and a filter value is coerced to that type). ``int`` and ``float`` are not mixed:
    ``Filters`` compares an int field with integer values only, so silently widening it would
    change what a filter matches.
    """

    def __init__(self) -> None:
        self._kinds: dict[str, MetaKind] = {}
        self._seen_at: dict[str, str] = {}
        self._untyped: dict[str, str] = {}  # fields seen only as empty lists so far

    def add(self, meta: Mapping[str, Any], where: str) -> None:
        """Check one document's meta; ``where`` names it in errors ("corpus.jsonl:12")."""
        for key, value in meta.items():
            if not isinstance(key, str) or not key:
                raise InputError(f"{where}: meta key {key!r} is not a non-empty string", _HINT_META)
            check_unicode(key, "a meta key", where)
            kind = _kind_of(key, value, where)
            known = self._kinds.get(key)
            first = self._seen_at.get(key) or self._untyped.get(key)
            if kind is None:
                if known is not None and not known.is_list:
                    raise _type_clash(key, "a list", str(known), where, first)
                self._untyped.setdefault(key, where)
            elif known is None and key in self._untyped and not kind.is_list:
                raise _type_clash(key, str(kind), "a list", where, first)
            elif known is None:
                self._kinds[key] = kind
                self._seen_at[key] = where
            elif known != kind:
                raise _type_clash(key, str(kind), str(known), where, first)

    @property
    def fields(self) -> dict[str, MetaKind]:
        """Field name → kind, sorted by name; a field only ever empty is a list of strings."""
        kinds = {k: MetaKind("str", is_list=True) for k in self._untyped}
        kinds.update(self._kinds)
        return dict(sorted(kinds.items()))


def check_unicode(text: str, what: str, where: str) -> None:
    """Refuse a lone UTF-16 surrogate (valid in a Python str and a JSON escape, not in UTF-8)."""
    if _SURROGATE.search(text):
        raise InputError(f"{where}: {what} holds a lone surrogate (\\ud800-\\udfff escape), not valid Unicode",
                         "fix the escape in the source; only whole characters can be indexed")  # fmt: skip


def _type_clash(key: str, here: str, there: str, where: str, first: str | None) -> InputError:
    return InputError(
        f"{where}: meta field {key!r} is {here} here but {there} at {first}",
        f"give {key!r} the same type in every document",
    )


def _kind_of(key: str, value: Any, where: str) -> MetaKind | None:
    """The kind of one meta value, or None for an empty list (no type to learn from)."""
    items = value if isinstance(value, list) else [value]
    types: set[ScalarType] = set()
    for item in items:
        scalar = _SCALAR_TYPES.get(type(item))  # exact types: bool is not an int here
        if scalar is None:
            raise InputError(
                f"{where}: meta field {key!r} has a value of unsupported type {type(item).__name__}",
                _HINT_META,
            )
        if isinstance(item, str):
            check_unicode(item, f"meta field {key!r}", where)
        if isinstance(item, float) and not math.isfinite(item):
            raise InputError(f"{where}: meta field {key!r} is {item}, not a finite number", _HINT_META)
        if scalar == "int" and not _I64[0] <= item <= _I64[1]:
            raise InputError(f"{where}: meta field {key!r} does not fit in 64 bits", _HINT_META)
        types.add(scalar)
    if len(types) > 1:
        mixed = " and ".join(sorted(types))
        raise InputError(f"{where}: meta field {key!r} mixes {mixed} in one list", _HINT_META)
    if not types:
        return None
    return MetaKind(types.pop(), is_list=isinstance(value, list))


# ---------------------------------------------------------------- reading


def load_corpus(path: str | Path, *, max_words: int = MAX_WORDS) -> list[Passage]:
    """Read, check and chunk a corpus folder or ``.jsonl`` file into passages."""
    passages: list[Passage] = []
    owner: dict[str, str] = {}
    for doc in read_documents(path):
        for passage in chunk(doc, max_words=max_words):
            if passage.id in owner:
                raise InputError(
                    f"{path}: passage id {passage.id!r} of document {doc.id!r} is also the id "
                    f"of a passage of document {owner[passage.id]!r}",
                    "rename one document: chunk ids are the document id plus '#0', '#1', …",
                )
            owner[passage.id] = doc.id
            passages.append(passage)
    return passages


def read_documents(path: str | Path) -> list[Passage]:
    """The documents of a corpus folder, ``.jsonl`` file or single text file, unchunked."""
    root = Path(path)
    if root.is_dir():
        docs = list(_read_folder(root))
    elif not root.exists():
        raise InputError(f"{root}: no such file or folder", "pass a folder or a .jsonl file")
    elif root.suffix.lower() == ".jsonl":
        docs = list(_read_jsonl(root))
    elif root.suffix.lower() in TEXT_SUFFIXES:
        docs = [d for d in [_read_text_file(root, root.name)] if d is not None]
    else:
        raise InputError(
            f"{root}: unsupported file type {root.suffix or '(no extension)'!r}",
            "pass a .jsonl file, a .txt/.md file, or a folder of .txt/.md files",
        )
    if not docs:
        raise InputError(
            f"{root}: the corpus is empty",
            "add .txt/.md files with text, or JSON lines with 'id' and 'text'",
        )
    return docs


def _read_folder(root: Path) -> Iterator[Passage]:
    files = sorted(
        (p for p in root.rglob("*") if p.suffix.lower() in TEXT_SUFFIXES and p.is_file()),
        key=lambda p: p.relative_to(root).as_posix(),
    )
    for file in files:
        rel = file.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        doc = _read_text_file(file, rel.as_posix())
        if doc is not None:
            yield doc


_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def _read_text_file(file: Path, doc_id: str) -> Passage | None:
    """One document per file; None for a file with no text (an empty placeholder)."""
    text = _decode(file.read_bytes(), file, 1)
    if not text.strip():
        return None
    heading = _HEADING.search(text)
    title = heading.group(1).strip() if heading else file.stem
    return Passage(id=doc_id, text=text.strip(), title=title)


def _decode(data: bytes, file: Path, first_line: int) -> str:
    """UTF-8 text of ``data``; binary or other encodings fail with the line where they do."""
    if b"\x00" in data:
        line = first_line + data[: data.index(b"\x00")].count(b"\n")
        raise InputError(
            f"{file}:{line}: looks like a binary file (NUL byte)",
            "the corpus takes UTF-8 text only; remove or convert this file",
        )
    try:
        return data.decode("utf-8-sig" if first_line == 1 else "utf-8")
    except UnicodeDecodeError as err:
        line = first_line + data[: err.start].count(b"\n")
        raise InputError(
            f"{file}:{line}: not valid UTF-8 (byte {data[err.start]:#04x})",
            "re-save the file as UTF-8, e.g. iconv -f LATIN1 -t UTF-8",
        ) from None


def _read_jsonl(file: Path) -> Iterator[Passage]:
    seen: dict[str, int] = {}
    schema = MetaSchema()
    with file.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            line = _decode(raw, file, number).strip()
            if not line:
                continue
            where = f"{file}:{number}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise InputError(
                    f"{where}: malformed JSON ({err.msg} at column {err.colno})",
                    "each line must be one JSON object",
                ) from None
            except (ValueError, RecursionError) as err:  # an int of over 4,300 digits; deep nesting
                raise InputError(f"{where}: unreadable JSON ({one_line(err, 200)})",
                                 "each line must be one flat JSON object") from None  # fmt: skip
            doc = _document(obj, where)
            if doc.id in seen:
                raise InputError(
                    f"{where}: duplicate id {doc.id!r} (first on line {seen[doc.id]})",
                    "give every document a unique id",
                )
            seen[doc.id] = number
            schema.add(doc.meta, where)
            yield doc


def _document(obj: Any, where: str) -> Passage:
    hint = 'write {"id": "...", "title": "...", "text": "...", "meta": {...}}'
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(obj).__name__}", hint)
    doc_id = obj.get("id")
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id.strip():
        what = "missing 'id'" if doc_id is None else f"'id' must be a non-empty string: {doc_id!r}"
        raise InputError(f"{where}: {what}", hint)
    text = obj.get("text")
    if not isinstance(text, str) or not text.strip():
        what = "missing 'text'" if text is None else "'text' must be a non-empty string"
        raise InputError(f"{where}: {what} (id {doc_id!r})", hint)
    title = obj.get("title", "")
    if title is None:
        title = ""
    if not isinstance(title, str):
        raise InputError(f"{where}: 'title' must be a string (id {doc_id!r})", hint)
    meta = obj.get("meta", {})
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise InputError(f"{where}: 'meta' must be an object (id {doc_id!r})", hint)
    for what, value in (("'id'", doc_id), ("'text'", text), ("'title'", title)):
        check_unicode(value, what, where)
    return Passage(id=doc_id, text=text.strip(), title=title.strip(), meta=meta)


# ---------------------------------------------------------------- chunking

_UNIT = re.compile(rf"[{HAN}]|[。！？]+[”’」』）]*|[^\s{HAN}。！？]+")
# A unit that holds a letter or digit, matched from its first character only (linear time).
_WORD_UNIT = re.compile(rf"(?<![^\s{HAN}。！？])[^\s{HAN}。！？]*?[^\W_{HAN}]")
_WORDY = re.compile(r"[^\W_]")
_HAN_CHAR = re.compile(f"[{HAN}]")
_HAN_OR_STOP = re.compile(f"[{HAN}。！？]")
_NON_SPACE = re.compile(r"\S")
_HAN_WEIGHT = 2 / 3  # 150 Han characters weigh as much as 100 English words


@dataclass(frozen=True, slots=True)
class _Span:
    start: int  # character offsets into the document text
    end: int
    weight: float


def chunk(doc: Passage, *, max_words: int = MAX_WORDS) -> list[Passage]:
    """``doc`` cut into passages of at most about ``max_words`` words, at sentence ends.

    The pieces are balanced (a 130-word text gives two of ~65, not 100 + 30); a single sentence
    longer than ``max_words`` is cut between words.
    """
    if max_words < 1:
        raise InputError(f"max_words must be at least 1, got {max_words}", "use e.g. 100")
    # Cheap upper bound on the weight first: most documents need no sentence splitting at all.
    if len(doc.text.split()) + 2 * len(_HAN_OR_STOP.findall(doc.text)) <= max_words:
        return [doc]
    sentences = _sentences(doc.text, max_words)
    total = sum(s.weight for s in sentences)
    if total <= max_words:
        return [doc]
    count = math.ceil(total / max_words)
    groups = _pack(sentences, total / count, max_words)
    while len(groups) > count:  # sentence sizes forced more pieces: rebalance over that many
        count = len(groups)
        groups = _pack(sentences, total / count, max_words)
    return [
        Passage(
            id=f"{doc.id}#{i}",
            text=doc.text[group[0].start : group[-1].end],
            title=doc.title,
            meta=dict(doc.meta),
        )
        for i, group in enumerate(groups)
    ]


def _pack(sentences: list[_Span], target: float, max_words: int) -> list[list[_Span]]:
    """Group sentences so group ``i`` ends near ``(i + 1) * target`` words, none over the cap."""
    groups: list[list[_Span]] = [[]]
    before, weight = 0.0, 0.0
    for s in sentences:
        over = weight + s.weight > max_words
        past_target = before + weight + s.weight / 2 > len(groups) * target
        if groups[-1] and (over or past_target):
            groups.append([])
            before, weight = before + weight, 0.0
        groups[-1].append(s)
        weight += s.weight
    return groups


def _sentences(text: str, max_words: int) -> list[_Span]:
    """Sentence spans of ``text``; those over ``max_words`` are cut into word-run pieces.

    The boundaries are the generator's (:func:`flare.text.sentence_ends`), except that a single
    newline does not end a sentence here: files are often wrapped mid-sentence; a blank line does.
    """
    spans: list[_Span] = []
    start = 0
    for end in sentence_ends(text, lines=False):
        _add_sentence(spans, text, start, end, max_words)
        start = end
    return spans


def _add_sentence(spans: list[_Span], text: str, start: int, end: int, max_words: int) -> None:
    first = _NON_SPACE.search(text, start, end)
    if first is None:
        return
    start = first.start()
    while text[end - 1].isspace():
        end -= 1
    han = len(_HAN_CHAR.findall(text, start, end))
    weight = len(_WORD_UNIT.findall(text, start, end)) + han * _HAN_WEIGHT
    if weight <= max_words:
        spans.append(_Span(start, end, weight))
    else:
        spans.extend(_pieces(list(_UNIT.finditer(text, start, end)), max_words))


def _pieces(units: list[re.Match[str]], max_words: int) -> list[_Span]:
    pieces: list[_Span] = []
    first, weight = 0, 0.0
    for i, unit in enumerate(units):
        w = _weight(unit.group())
        if weight + w > max_words and i > first:
            pieces.append(_Span(units[first].start(), units[i - 1].end(), weight))
            first, weight = i, 0.0
        weight += w
    pieces.append(_Span(units[first].start(), units[-1].end(), weight))
    return pieces


def _weight(unit: str) -> float:
    if len(unit) == 1 and _HAN_CHAR.match(unit):
        return _HAN_WEIGHT
    return 1.0 if _WORDY.search(unit) else 0.0


def check_passages(items: Sequence[Passage]) -> dict[str, MetaKind]:
    """Refuse an empty list, missing or duplicate ids and mixed meta types; return the meta kinds.

    Every index builder calls this before writing anything, so bad input never leaves a
    half-built index behind.
    """
    if not items:
        raise InputError("nothing to index: no passages", "check the corpus path and its files")
    schema = MetaSchema()
    seen: set[str] = set()
    for p in items:
        if not isinstance(p.id, str) or not p.id:
            raise InputError(f"passage id {p.id!r} is not a non-empty string", "give every id")
        if p.id in seen:
            raise InputError(f"duplicate passage id {p.id!r}", "give every passage a unique id")
        seen.add(p.id)
        for what, value in (("id", p.id), ("text", p.text), ("title", p.title)):
            check_unicode(value, what, f"passage {p.id!r}")
        schema.add(p.meta, f"passage {p.id!r}")
    return schema.fields
