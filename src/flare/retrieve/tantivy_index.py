"""The embedded BM25 retriever: a tantivy index in a plain directory, no server needed.

An index directory holds tantivy's files plus ``flare-index.json``, which records the format
version, the passage count, the analyzer, every metadata field with its type, and the size and
SHA-256 of every file (checked on open: :mod:`flare.retrieve.integrity`). The schema is
derived from the data:

* ``id`` — raw (exact) and stored, for :meth:`TantivyRetriever.get`;
* ``body`` — the :func:`~flare.retrieve.analyzers.analyze` tokens of title and text, indexed
  with tantivy's whitespace tokenizer and scored with BM25;
* ``passage`` — stored bytes: title, text and meta as JSON, so a passage comes back exactly as it
  went in (ints stay ints, list order is kept) without indexing the text a second time;
* ``m0``, ``m1``, … — one typed field per meta key (int → i64, float → f64, bool → bool,
  str → raw text; lists are multi-valued), named by position so any key is a valid name.

Searches are built as query objects, never parsed from the user's text, so ``title:x AND (``
in a question is just three words. Filters are MUST clauses of the same query: a passage that
fails them is never scored, never returned and cannot push a permitted passage out of the top k.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tantivy
from tantivy import FieldType, Occur, Query

from flare.errors import CorpusIndexError, InputError, one_line
from flare.retrieve.analyzers import ANALYZER_NAME, IDENTIFIER_BOOST, analyze, is_identifier
from flare.retrieve.atomic import PARAMS_FILE, building, read_params, write_params
from flare.retrieve.base import check_fields
from flare.retrieve.corpus import MetaKind, MetaSchema, check_passages
from flare.retrieve.filters import NO_FILTERS, Condition, Filters, Op, Scalar, coerce, holds
from flare.retrieve.integrity import check_files, digests
from flare.types import Hit, Passage

FORMAT = "flare-bm25"
FORMAT_VERSION = 1
MAX_QUERY_TOKENS = 256  # bounds the work of one search when a whole document is pasted as a query

ProgressCallback = Callable[[int, int], None]
"""Called as ``progress(done, total)`` after each passage is written."""

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_SAMPLE: dict[str, Scalar] = {"int": 0, "float": 0.0, "str": "", "bool": False}
_HINT_BUILD = "build it with: flare index CORPUS --index DIR"
_HINT_REBUILD = "rebuild it with: flare index CORPUS --index DIR"


@dataclass(frozen=True, slots=True)
class IndexInfo:
    """What :func:`build_index` wrote: where, how many passages, which meta fields."""

    path: Path
    count: int
    meta_fields: dict[str, MetaKind] = field(default_factory=dict)
    analyzer: str = ANALYZER_NAME
    seconds: float = 0.0


def build_index(
    passages: Iterable[Passage],
    index_dir: str | Path,
    *,
    progress: bool | ProgressCallback = False,
    heap_size: int = 128_000_000,
) -> IndexInfo:
    """Index ``passages`` into ``index_dir``, replacing any index there only once complete.

    The index is built in a temporary directory beside ``index_dir`` and renamed into place, so
    a failed build (bad input, an exception, Ctrl-C, SIGTERM in the CLI) leaves the old index
    intact and no temporary directory behind; a build killed outright leaves debris that the
    next build deletes (see :mod:`flare.retrieve.atomic`). The size and SHA-256 of every file
    go into the params file, and opening checks them. ``progress=True`` shows a tqdm bar on
    stderr; a callable gets ``(done, total)``. Passages are read into memory first because the schema (one typed field
    per meta key) must be known before the first one is written.
    """
    started = time.perf_counter()
    target = Path(index_dir).resolve()
    items = list(passages)
    kinds = check_passages(items)
    _check_target(target)
    with building(target) as tmp:
        _write(items, kinds, tmp, progress, heap_size)
    return IndexInfo(target, len(items), kinds, ANALYZER_NAME, time.perf_counter() - started)


def _check_target(target: Path) -> None:
    if target.exists() and not target.is_dir():
        raise CorpusIndexError(f"{target} exists and is not a directory", "choose another --index")
    if target.is_dir() and any(target.iterdir()) and not (target / PARAMS_FILE).is_file():
        raise CorpusIndexError(
            f"{target} is not empty and holds no flare index; refusing to replace it",
            "choose an empty or new directory for --index",
        )


def _write(
    items: list[Passage],
    kinds: dict[str, MetaKind],
    tmp: Path,
    progress: bool | ProgressCallback,
    heap_size: int,
) -> None:
    from tqdm import tqdm

    names = {key: f"m{i}" for i, key in enumerate(kinds)}
    index = tantivy.Index(_schema(kinds, names), path=str(tmp))
    bar = tqdm(total=len(items), desc="indexing", unit="passage", file=sys.stderr, disable=progress is not True)

    def add_all(writer: Any) -> None:
        with bar:
            for done, p in enumerate(items, start=1):
                writer.add_document(_document(p, kinds, names))
                bar.update()
                if callable(progress):
                    progress(done, len(items))

    _commit(index, heap_size, add_all)
    params: dict[str, Any] = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "count": len(items),
        "analyzer": ANALYZER_NAME,
        "meta_fields": {
            key: {"type": kind.type, "list": kind.is_list, "field": names[key]} for key, kind in kinds.items()
        },
        "tantivy": str(getattr(tantivy, "__version__", "")),
        "files": digests(tmp, skip=(PARAMS_FILE,)),
    }
    write_params(tmp, params)


def _commit(index: tantivy.Index, heap_size: int, change: Callable[[Any], None]) -> None:
    """Apply ``change`` through one writer and commit; on any failure roll back, so nothing is half-written."""
    writer = index.writer(heap_size=heap_size)
    try:
        change(writer)
        writer.commit()
    except BaseException:
        # Stop the writer's threads before a caller deletes the directory under them.
        writer.rollback()
        raise
    finally:
        writer.wait_merging_threads()


def _schema(kinds: dict[str, MetaKind], names: dict[str, str]) -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
    sb.add_text_field("body", tokenizer_name="whitespace", index_option="freq")
    sb.add_bytes_field("passage", stored=True)
    for key, kind in kinds.items():
        name = names[key]
        if kind.type == "int":
            sb.add_integer_field(name, indexed=True, fast=True)
        elif kind.type == "float":
            sb.add_float_field(name, indexed=True, fast=True)
        elif kind.type == "bool":
            sb.add_boolean_field(name, indexed=True)
        else:
            sb.add_text_field(name, tokenizer_name="raw", index_option="basic")
    return sb.build()


def _document(p: Passage, kinds: dict[str, MetaKind], names: dict[str, str]) -> tantivy.Document:
    doc = tantivy.Document()
    doc.add_text("id", p.id)
    doc.add_text("body", " ".join(analyze(f"{p.title}\n{p.text}")))
    stored = {"title": p.title, "text": p.text, "meta": dict(p.meta)}
    doc.add_bytes("passage", json.dumps(stored, ensure_ascii=False).encode())
    for key, value in p.meta.items():
        name, kind = names[key], kinds[key]
        for item in value if isinstance(value, list) else [value]:
            if kind.type == "int":
                doc.add_integer(name, item)
            elif kind.type == "float":
                doc.add_float(name, item + 0.0)  # -0.0 and 0.0 must be one term, as in Python
            elif kind.type == "bool":
                doc.add_boolean(name, item)
            else:
                doc.add_text(name, item)
    return doc


class TantivyRetriever:
    """BM25 search over an index made by :func:`build_index`, with filters applied inside.

    Opening reads the params file and checks its version, so a stale or foreign directory fails
    at once with a hint instead of returning odd results later.

    Example::

        build_index(load_corpus("docs/"), Path("index"))
        bm25 = TantivyRetriever("index")
        hits = bm25.search("who proposed FLARE", k=5, filters=Filters.parse(["year>=2023"]))
        for hit in hits:
            print(f"{hit.score:.2f}", hit.passage.id, hit.passage.title)
    """

    name = "bm25"

    def __init__(self, index_dir: str | Path, *, verify: bool = True) -> None:
        """Open and check an index; ``verify=False`` skips the file digests (sizes are still
        checked), for indexes so large that reading them once per open is too slow."""
        self.index_dir = Path(index_dir)
        params = _read_params(self.index_dir)
        self.meta_fields, self._names = _meta_fields(params, self.index_dir / PARAMS_FILE)
        check_files(self.index_dir, params.get("files"), full=verify, hint=_HINT_REBUILD)
        with self._damage("cannot open index"):
            self._index = tantivy.Index.open(str(self.index_dir))
            self._schema = self._index.schema
            self._searcher = self._index.searcher()
        if self._searcher.num_docs != params["count"]:
            raise CorpusIndexError(
                f"{self.index_dir}: index holds {self._searcher.num_docs} passages, params file "
                f"says {params['count']}; the index is incomplete",
                _HINT_REBUILD,
            )
        self._terms: dict[str, list[str]] = {}
        self._probe()

    def _probe(self) -> None:
        """Use every part a search reads (schema fields, terms, postings, stored passages) once,
        so that a damaged index fails here, with a hint, and not in the middle of an answer."""
        with self._damage("the index fails a probe search"):
            for key, name in self._names.items():
                Query.term_query(self._schema, name, _SAMPLE[self.meta_fields[key].type])
            first = self._searcher.terms_with_prefix("body", "", limit=1)
            if first:
                query = Query.term_query(self._schema, "body", first[0][0])
                for _, addr in self._searcher.search(query, limit=1, count=False).hits:
                    self._passage(self._searcher.doc(addr))

    @contextlib.contextmanager
    def _damage(self, what: str) -> Iterator[None]:
        """Turn what the search library raises on a damaged index into one CorpusIndexError."""
        try:
            yield
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise CorpusIndexError(f"{self.index_dir}: {what}: {one_line(err)}", _HINT_REBUILD) from err
        except BaseException as err:
            if isinstance(err, (Exception, *_PYTHON_BASE_EXCEPTIONS)):
                raise
            # Only the native library raises a BaseException of its own: pyo3 turns a Rust panic
            # into PanicException, a class it does not export.
            raise CorpusIndexError(f"{self.index_dir}: {what}: {one_line(err)}", _HINT_REBUILD) from err

    def __len__(self) -> int:
        return int(self._searcher.num_docs)

    def search(self, query: str, *, k: int, filters: Filters = NO_FILTERS) -> list[Hit]:
        """The best ``k`` passages for ``query`` among those matching ``filters``, best first."""
        if k < 0:
            raise InputError(f"k must be 0 or more, got {k}", "ask for k=5 or so")
        self.check_filters(filters)
        musts = [self._condition(c) for c in filters.conditions]
        tokens = list(dict.fromkeys(analyze(query)))[:MAX_QUERY_TOKENS]
        if not tokens or k == 0 or any(m is None for m in musts):
            return []
        terms = [(Occur.Should, self._term(t)) for t in tokens]
        clauses = [(Occur.Must, Query.boolean_query(terms))]
        clauses += [(Occur.Must, Query.const_score_query(m, 0.0)) for m in musts if m is not None]
        with self._damage("search failed"):
            result = self._searcher.search(Query.boolean_query(clauses), limit=k, count=False)
            return [Hit(self._passage(self._searcher.doc(addr)), float(s)) for s, addr in result.hits]

    def check_filters(self, filters: Filters) -> None:
        """Raise :class:`~flare.errors.FilterError` if ``filters`` names a field this index does not have."""
        check_fields(filters, self.meta_fields)

    def _term(self, token: str) -> Query:
        """A query term; an identifier (``fx-210``, ``差旅-2026-03``) weighs more than a word: a
        question that names one is about the passages that state exactly it."""
        term = Query.term_query(self._schema, "body", token)
        return Query.boost_query(term, IDENTIFIER_BOOST) if is_identifier(token) else term

    supports_updates = True

    def add(self, passages: Iterable[Passage]) -> None:
        """Insert passages; one with an existing id replaces it at once (e.g. a revoked ACL).

        Meta must use the index's fields with their types (a new field needs a rebuild, since a
        field's type is fixed in the schema).
        """
        items = list(passages)
        for p in items:
            schema = MetaSchema()
            schema.add(p.meta, p.id)
            for key, kind in schema.fields.items():
                known = self.meta_fields.get(key)
                if known is None or (known != kind and p.meta.get(key) != []):
                    raise InputError(
                        f"passage {p.id!r}: meta field {key!r} ({kind}) does not match this index "
                        f"({known or 'no such field'})",
                        f"rebuild the index with that field: {_HINT_BUILD}",
                    )

        def change(writer: Any) -> None:
            for p in items:
                writer.delete_documents_by_term("id", p.id)
                writer.add_document(_document(p, self.meta_fields, self._names))

        self._write(change)

    def delete(self, ids: Iterable[str]) -> None:
        """Remove passages by id; unknown ids are ignored."""
        gone = list(ids)

        def change(writer: Any) -> None:
            for i in gone:
                writer.delete_documents_by_term("id", i)

        self._write(change)

    def _write(self, change: Callable[[Any], None]) -> None:
        """Apply ``change`` in one commit, then refresh the searcher, the count and the checksums.

        The checksums are dropped from the params file before the commit and written again
        after it, so a crash in between leaves an index that opens (unverified), not one that
        fails its own checksums.
        """
        params = _read_params(self.index_dir)
        if params.pop("files", None) is not None:
            write_params(self.index_dir, params)
        _commit(self._index, 32_000_000, change)
        self._index.reload()
        self._searcher = self._index.searcher()
        self._terms.clear()
        params["count"] = int(self._searcher.num_docs)
        params["files"] = digests(self.index_dir, skip=(PARAMS_FILE,))
        write_params(self.index_dir, params)

    def get(self, passage_id: str) -> Passage | None:
        """The passage with this id, or None if the index has none."""
        query = Query.term_query(self._schema, "id", passage_id)
        with self._damage("lookup failed"):
            hits = self._searcher.search(query, limit=1, count=False).hits
            return self._passage(self._searcher.doc(hits[0][1])) if hits else None

    def _passage(self, doc: tantivy.Document) -> Passage:
        """The stored passage; a damaged store gives ValueError/KeyError/TypeError (see _damage)."""
        stored = json.loads(bytes(doc.get_first("passage") or b"{}"))
        if not isinstance(stored, dict) or not isinstance(stored["meta"], dict):
            raise ValueError("a stored passage is not a JSON object")
        return Passage(str(doc.get_first("id")), str(stored["text"]), str(stored["title"]), stored["meta"])

    def _condition(self, cond: Condition) -> Query | None:
        """A query matching exactly what ``cond.matches`` accepts, or None if that is nothing.

        ``cond.field`` is one of the index's fields (:meth:`check_filters` ran first).
        """
        kind, name = self.meta_fields[cond.field], self._names[cond.field]
        queries: list[Query] = []
        for wanted in cond.values:
            value = coerce(wanted, _SAMPLE[kind.type])
            if value is None or (isinstance(value, float) and math.isnan(value)):
                continue  # as in Condition.matches: a value of the wrong type matches nothing
            query = self._test(name, kind, cond.op, value)
            if query is not None:
                queries.append(query)
        if len(queries) <= 1:
            return queries[0] if queries else None
        return Query.boolean_query([(Occur.Should, q) for q in queries])

    def _test(self, name: str, kind: MetaKind, op: Op, value: Scalar) -> Query | None:
        """One ``stored <op> value`` test on field ``name``, with ``value`` already coerced."""
        if kind.type == "bool":
            ok = [b for b in (False, True) if holds(op, b, value)]
            return Query.term_set_query(self._schema, name, ok) if ok else None
        if kind.type == "str":
            if op == "eq":
                return Query.term_query(self._schema, name, value)
            ok_terms = _str_range(self._field_terms(name), op, str(value))
            return Query.term_set_query(self._schema, name, ok_terms) if ok_terms else None
        if kind.type == "float":
            value = float(value) + 0.0
        elif isinstance(value, int) and not _I64_MIN <= value <= _I64_MAX:
            # Out of i64 range: no stored int equals it; a range covers all values or none.
            if op == "eq" or (value > 0) == (op in ("gt", "gte")):
                return None
            return Query.range_query(self._schema, name, FieldType.Integer, _I64_MIN, None)
        if op == "eq":
            return Query.term_query(self._schema, name, value)
        ftype = FieldType.Integer if kind.type == "int" else FieldType.Float
        if op in ("gt", "gte"):
            return Query.range_query(self._schema, name, ftype, value, None, include_lower=op == "gte")
        return Query.range_query(self._schema, name, ftype, None, value, include_upper=op == "lte")

    def _field_terms(self, name: str) -> list[str]:
        """Every distinct value of a string field, sorted (tantivy has no range on text)."""
        if name not in self._terms:
            pairs = self._searcher.terms_with_prefix(name, "", limit=None)
            self._terms[name] = sorted(term for term, _ in pairs)
        return self._terms[name]


def _str_range(terms: list[str], op: str, value: str) -> list[str]:
    """The sorted ``terms`` for which ``term <op> value`` holds (code-point order, as Python)."""
    if op in ("gt", "gte"):
        cut = bisect.bisect_right if op == "gt" else bisect.bisect_left
        return terms[cut(terms, value) :]
    cut = bisect.bisect_right if op == "lte" else bisect.bisect_left
    return terms[: cut(terms, value)]


_PYTHON_BASE_EXCEPTIONS = (KeyboardInterrupt, SystemExit, GeneratorExit)
"""Python's own exceptions outside :class:`Exception`: they pass through :meth:`TantivyRetriever._damage`."""


def _read_params(index_dir: Path) -> dict[str, Any]:
    params = read_params(index_dir, fmt=FORMAT, version=FORMAT_VERSION, hint=_HINT_BUILD)
    path = index_dir / PARAMS_FILE
    if params.get("analyzer") != ANALYZER_NAME:
        raise CorpusIndexError(
            f"{path}: built with analyzer {params.get('analyzer')!r}, not {ANALYZER_NAME!r}",
            f"rebuild the index: {_HINT_BUILD}",
        )
    return params


def _meta_fields(params: dict[str, Any], path: Path) -> tuple[dict[str, MetaKind], dict[str, str]]:
    """The meta field kinds and their tantivy field names recorded in the params file."""
    kinds: dict[str, MetaKind] = {}
    names: dict[str, str] = {}
    try:
        for key, spec in params["meta_fields"].items():
            if spec["type"] not in _SAMPLE or not isinstance(spec["list"], bool):
                raise ValueError(f"field {key!r}: {spec}")
            kinds[key] = MetaKind(spec["type"], spec["list"])
            names[key] = str(spec["field"])
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise CorpusIndexError(f"{path}: bad meta_fields ({err})", _HINT_BUILD) from None
    return kinds, names
