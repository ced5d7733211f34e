"""The distributed retriever: Milvus, with BM25, dense vectors, hybrid RRF and filters inside.

The same code runs against Milvus Lite (an embedded engine in a local ``.db`` file, what the tests
use) and a Milvus cluster (``http://host:19530``): only the URI changes.

A collection holds per passage: ``id``; ``body`` (title and text, analysed by Milvus for BM25 —
``jieba`` words, lowercased, punctuation and spaces dropped — so English and Chinese share one
field); ``sparse`` (the BM25 function's output); optionally ``dense`` (all-MiniLM-L6-v2);
``passage`` (title, text and meta as JSON, so a passage comes back exactly as given); one typed
field per meta key (``m0``, ``m1``, … — INT64, DOUBLE, BOOL, VARCHAR, or an ARRAY of those for
lists); and ``present``, the names of the meta fields a passage has (Milvus Lite has no NULL,
and a missing field must match no condition). The schema description records the format
version and the meta key ↔ field mapping.

Filters become a Milvus boolean expression passed *with* the search, so the engine ranks only
permitted rows. Values are written as typed literals — numbers formatted from Python numbers,
strings quoted with ``\\`` and ``"`` escaped — so nothing inside a value can change the
expression; a string value holding a line break cannot be written as a literal and is rejected.

Example::

    build_collection(load_corpus("docs/"), "./milvus.db", "docs")
    r = MilvusRetriever("./milvus.db", "docs")              # hybrid when dense vectors exist
    hits = r.search("who proposed FLARE", k=5, filters=Filters.parse(["acl=public"]))
"""

from __future__ import annotations

import json
import math
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flare.errors import CorpusIndexError, FilterError, InputError, RetrieverError, one_line
from flare.retrieve.base import check_fields
from flare.retrieve.corpus import MetaKind, MetaSchema
from flare.retrieve.dense import Embedder, MiniLMEmbedder, passage_text
from flare.retrieve.filters import NO_FILTERS, SYMBOLS, Condition, Filters, Op, Scalar, coerce, holds
from flare.types import Hit, Passage

__all__ = ["DEFAULT_ANALYZER", "MilvusIndexInfo", "MilvusRetriever", "build_collection"]

FORMAT, FORMAT_VERSION = "flare-milvus", 1
DEFAULT_ANALYZER: dict[str, Any] = {"tokenizer": "jieba", "filter": ["lowercase", "cnalphanumonly"]}
MILVUS_HINT = "pip install 'flare-rag[milvus]'"
MAX_VARCHAR = 65535  # bytes, Milvus's limit for one VARCHAR value
MAX_LIST = 64  # items per list-valued meta field (ARRAY capacity)
MAX_TOPK = 16384
_TYPES = {"int": "INT64", "float": "DOUBLE", "bool": "BOOL", "str": "VARCHAR"}
_SAMPLE: dict[str, Scalar] = {"int": 0, "float": 0.0, "str": "", "bool": False}
_DEFAULT: dict[str, Any] = {"int": 0, "float": 0.0, "str": "", "bool": False}
_OPS = {**SYMBOLS, "eq": "=="}  # Milvus writes equality as ==
_I64 = (-(2**63), 2**63 - 1)
_OUT = ["id", "passage"]


def _client(uri: str, token: str, db_name: str, timeout: float) -> Any:
    """A ``MilvusClient``; Milvus Lite's import warns about pkg_resources, which is harmless."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if uri.endswith(".db"):
                import milvus_lite  # noqa: F401
            from pymilvus import MilvusClient
    except ImportError as err:
        raise RetrieverError(f"the Milvus backend needs {err.name}", MILVUS_HINT) from None
    if uri.endswith(".db"):
        Path(uri).expanduser().parent.mkdir(parents=True, exist_ok=True)
    try:
        return MilvusClient(uri=uri, token=token, db_name=db_name, timeout=timeout)
    except Exception as err:
        raise RetrieverError(f"cannot connect to Milvus at {uri}: {one_line(err)}", "is it running?") from err


@dataclass(frozen=True, slots=True)
class MilvusIndexInfo:
    """What :func:`build_collection` wrote."""

    uri: str
    collection: str
    count: int
    dense: bool
    seconds: float


class MilvusRetriever:
    """Search a collection made by :func:`build_collection`; connects on first use.

    ``mode`` is ``"bm25"``, ``"dense"`` or ``"hybrid"`` (RRF of the two, ``rrf_k`` as in
    :mod:`flare.retrieve.hybrid`); the default is hybrid when the collection has dense vectors.
    """

    name = "milvus"
    supports_updates = True

    def __init__(self, uri: str, collection: str, *, mode: str | None = None,
                 embedder: Embedder | None = None, token: str = "", db_name: str = "",
                 timeout: float = 60.0, rrf_k: int = 60) -> None:  # fmt: skip
        if mode not in (None, "bm25", "dense", "hybrid"):
            raise InputError(f"unknown Milvus search mode {mode!r}", "use bm25, dense or hybrid")
        self.uri, self.collection, self.rrf_k = uri, collection, rrf_k
        self._mode, self._embedder = mode, embedder
        self._connect = (token, db_name, timeout)
        self._c: Any = None
        self._params: dict[str, Any] = {}
        self.meta_fields: dict[str, MetaKind] = {}

    @property
    def mode(self) -> str:
        self._open()
        return str(self._mode)

    def _open(self) -> Any:
        if self._c is not None:
            return self._c
        c = _client(self.uri, *self._connect)
        if not c.has_collection(self.collection):
            raise CorpusIndexError(f"{self.uri}: no collection {self.collection!r}",
                                   "build it with: flare index CORPUS --index milvus:URI#NAME")  # fmt: skip
        params = _read_params(c.describe_collection(self.collection), self.collection)
        self._params = params
        self.meta_fields = {k: MetaKind(v["type"], v["list"]) for k, v in params["meta_fields"].items()}
        has_dense = params.get("embedder") is not None
        self._mode = self._mode or ("hybrid" if has_dense else "bm25")
        if self._mode != "bm25":
            if not has_dense:
                raise CorpusIndexError(f"collection {self.collection!r} has no dense vectors",
                                       "search with mode='bm25', or rebuild with dense=True")  # fmt: skip
            self._embedder = self._embedder or MiniLMEmbedder()
            if self._embedder.name != params["embedder"]:
                raise CorpusIndexError(f"collection built with {params['embedder']}, "
                                       f"not {self._embedder.name}", "use the same embedder")  # fmt: skip
        self._c = c
        return c

    def __len__(self) -> int:
        return int(self._open().get_collection_stats(self.collection)["row_count"])

    def close(self) -> None:
        if self._c is not None:
            self._c.close()
            self._c = None

    def search(self, query: str, *, k: int, filters: Filters = NO_FILTERS) -> list[Hit]:
        """The best ``k`` passages for ``query`` among those matching ``filters``, best first."""
        if k < 0:
            raise InputError(f"k must be 0 or more, got {k}", "ask for k=5 or so")
        c = self._open()
        self.check_filters(filters)
        expr = filter_expression(filters, self._params["meta_fields"]) if filters else ""
        if k == 0 or not query.strip() or expr is None:
            return []
        k = min(k, MAX_TOPK)
        try:
            if self._mode == "bm25":
                res = c.search(self.collection, data=[query], anns_field="sparse", limit=k,
                               filter=expr, output_fields=_OUT,
                               search_params={"metric_type": "BM25"})  # fmt: skip
            else:
                vector = self._embed([query])[0]
                res = self._dense_or_hybrid(c, query, vector, expr, k)
        except Exception as err:
            raise RetrieverError(f"Milvus search failed: {one_line(err)}", "check the server log") from err
        return [_hit(row) for row in (res[0] if res else [])]

    def check_filters(self, filters: Filters) -> None:
        """Raise :class:`~flare.errors.FilterError` if ``filters`` names a field the collection lacks."""
        if filters:
            self._open()
            check_fields(filters, self._params["meta_fields"], where=f"collection {self.collection!r}")

    def _dense_or_hybrid(self, c: Any, query: str, vector: list[float], expr: str, k: int) -> Any:
        if self._mode == "dense":
            return c.search(self.collection, data=[vector], anns_field="dense", limit=k,
                            filter=expr, output_fields=_OUT, search_params={"metric_type": "IP"})  # fmt: skip
        from pymilvus import AnnSearchRequest, RRFRanker

        depth = min(max(4 * k, 20), MAX_TOPK)
        requests = [
            AnnSearchRequest([query], "sparse", {"metric_type": "BM25"}, depth, expr=expr),
            AnnSearchRequest([vector], "dense", {"metric_type": "IP"}, depth, expr=expr),
        ]
        return c.hybrid_search(self.collection, requests, RRFRanker(self.rrf_k), limit=k,
                               output_fields=_OUT)  # fmt: skip

    def _embed(self, texts: list[str]) -> list[list[float]]:
        assert self._embedder is not None
        return [[float(x) for x in row] for row in self._embedder.embed(texts)]

    def add(self, passages: Iterable[Passage]) -> None:
        """Insert passages or replace those with the same id; visible to the next search."""
        c = self._open()
        items = list(passages)
        fields = self._params["meta_fields"]
        for p in items:
            _check_meta(p, fields)
        embedder = self._embedder if self._params.get("embedder") else None
        if embedder is None and self._params.get("embedder"):
            embedder = self._embedder = MiniLMEmbedder()
        for start in range(0, len(items), 256):
            rows = _rows(items[start : start + 256], fields, embedder)
            c.upsert(self.collection, rows)

    def delete(self, ids: Iterable[str]) -> None:
        """Remove passages by id; unknown ids are ignored."""
        wanted = list(ids)
        if wanted:
            self._open().delete(self.collection, ids=wanted)


def build_collection(
    passages: Iterable[Passage], uri: str, collection: str, *, dense: bool = True,
    embedder: Embedder | None = None, analyzer: dict[str, Any] | None = None,
    replace: bool = False, token: str = "", db_name: str = "",
) -> MilvusIndexInfo:  # fmt: skip
    """Create ``collection`` at ``uri`` and load ``passages`` into it.

    Everything that can fail on the data (ids, meta types, sizes, embeddings) is checked before
    Milvus is touched; a load that fails half-way drops the half-built collection. An existing
    collection is replaced only with ``replace=True`` (dropped first: Milvus Lite has no rename or
    alias to swap atomically; on a cluster, point an alias at a fresh collection instead).
    """
    from pymilvus import DataType, Function, FunctionType

    started = time.perf_counter()
    items = list(passages)
    if not items:
        raise InputError("nothing to index: no passages", "check the corpus path and its files")
    schema_kinds = _kinds(items)
    fields: dict[str, dict[str, Any]] = {k: {"type": v.type, "list": v.is_list, "field": f"m{i}"}
              for i, (k, v) in enumerate(schema_kinds.items())}  # fmt: skip
    model = (embedder or MiniLMEmbedder()) if dense else None
    batches = [_rows(items[i : i + 256], fields, model) for i in range(0, len(items), 256)]
    c = _client(uri, token, db_name, 60.0)
    if c.has_collection(collection):
        if not replace:
            raise CorpusIndexError(f"{uri}: collection {collection!r} exists", "pass replace=True")
        c.drop_collection(collection)
    params = {"format": FORMAT, "version": FORMAT_VERSION, "meta_fields": fields,
              "analyzer": analyzer or DEFAULT_ANALYZER,
              "embedder": model.name if model else None, "dim": model.dim if model else 0}  # fmt: skip
    schema = c.create_schema(auto_id=False, enable_dynamic_field=False, description=json.dumps(params))
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=1024)
    schema.add_field("body", DataType.VARCHAR, max_length=MAX_VARCHAR, enable_analyzer=True,
                     analyzer_params=params["analyzer"])  # fmt: skip
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_field("passage", DataType.VARCHAR, max_length=MAX_VARCHAR)
    schema.add_field("present", DataType.ARRAY, element_type=DataType.VARCHAR,
                     max_capacity=max(len(fields), 1), max_length=16)  # fmt: skip
    if model:
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=model.dim)
    for spec in fields.values():
        dtype = getattr(DataType, _TYPES[spec["type"]])
        extra = {"max_length": MAX_VARCHAR if not spec["list"] else 1024} if spec["type"] == "str" else {}
        if spec["list"]:
            schema.add_field(spec["field"], DataType.ARRAY, element_type=dtype, max_capacity=MAX_LIST, **extra)
        else:
            schema.add_field(spec["field"], dtype, **extra)
    schema.add_function(Function(name="bm25", function_type=FunctionType.BM25,
                                 input_field_names=["body"], output_field_names=["sparse"]))  # fmt: skip
    index = c.prepare_index_params()
    index.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    if model:
        index.add_index(field_name="dense", index_type="AUTOINDEX", metric_type="IP")
    # Strong consistency: a deleted passage or a revoked permission must not be served afterwards.
    c.create_collection(collection, schema=schema, index_params=index, consistency_level="Strong")
    try:
        for rows in batches:
            c.insert(collection, rows)
    except BaseException:
        c.drop_collection(collection)
        raise
    finally:
        c.close()
    return MilvusIndexInfo(uri, collection, len(items), model is not None, time.perf_counter() - started)


# ---------------------------------------------------------------- rows and checks


def _kinds(items: list[Passage]) -> dict[str, MetaKind]:
    schema, seen = MetaSchema(), set[str]()
    for p in items:
        if not isinstance(p.id, str) or not p.id or p.id in seen:
            raise InputError(f"passage id {p.id!r} is empty or repeated", "give unique ids")
        seen.add(p.id)
        schema.add(p.meta, f"passage {p.id!r}")
    return schema.fields


def _check_meta(p: Passage, fields: dict[str, Any]) -> None:
    """A passage added later must fit the collection's typed fields."""
    for key, value in p.meta.items():
        spec = fields.get(key)
        if spec is None:
            raise InputError(f"passage {p.id!r}: meta field {key!r} is not in the collection",
                             "rebuild the collection with that field")  # fmt: skip
        items = value if isinstance(value, list) else [value]
        if isinstance(value, list) != spec["list"] or any(
            type(coerce(v, _SAMPLE[spec["type"]])) is not type(v) for v in items
        ):
            raise InputError(f"passage {p.id!r}: meta field {key!r} must be "
                             f"{'list of ' if spec['list'] else ''}{spec['type']}", "fix its type")  # fmt: skip


def _rows(items: list[Passage], fields: dict[str, Any], embedder: Embedder | None) -> list[dict[str, Any]]:
    vectors = embedder.embed([passage_text(p) for p in items]) if embedder else None
    rows = []
    for i, p in enumerate(items):
        stored = json.dumps({"title": p.title, "text": p.text, "meta": dict(p.meta)}, ensure_ascii=False)
        body = f"{p.title}\n{p.text}"
        if max(len(stored.encode()), len(body.encode())) > MAX_VARCHAR or len(p.id.encode()) > 1024:
            raise InputError(f"passage {p.id!r} is too long for Milvus (64 KiB)", "chunk it smaller")
        row: dict[str, Any] = {"id": p.id, "body": body, "passage": stored,
                               "present": [fields[k]["field"] for k in p.meta]}  # fmt: skip
        for key, spec in fields.items():
            value = p.meta.get(key, [] if spec["list"] else _DEFAULT[spec["type"]])
            if spec["list"] and len(value) > MAX_LIST:
                raise InputError(f"passage {p.id!r}: {key!r} has over {MAX_LIST} items", "shorten it")
            row[spec["field"]] = value
        if vectors is not None:
            row["dense"] = [float(x) for x in vectors[i]]
        rows.append(row)
    return rows


def _hit(row: dict[str, Any]) -> Hit:
    entity = row.get("entity", row)
    stored = json.loads(entity["passage"])
    return Hit(Passage(str(entity["id"]), stored["text"], stored["title"], stored["meta"]), float(row["distance"]))


def _read_params(described: dict[str, Any], collection: str) -> dict[str, Any]:
    hint = "rebuild it with: flare index CORPUS --index milvus:URI#NAME"
    try:
        params = json.loads(described.get("description") or "")
    except json.JSONDecodeError:
        raise CorpusIndexError(f"collection {collection!r} was not made by flare", hint) from None
    if not isinstance(params, dict) or params.get("format") != FORMAT:
        raise CorpusIndexError(f"collection {collection!r} was not made by flare", hint)
    if params.get("version") != FORMAT_VERSION:
        raise CorpusIndexError(f"collection {collection!r}: format {params.get('version')!r}, "
                               f"this flare reads {FORMAT_VERSION}", hint)  # fmt: skip
    return params


# ---------------------------------------------------------------- filter expressions


def filter_expression(filters: Filters, fields: dict[str, Any]) -> str | None:
    """A Milvus boolean expression equal to ``filters.matches``; None when nothing can match."""
    parts = []
    for cond in filters.conditions:
        part = _condition(cond, fields)
        if part is None:
            return None
        parts.append(part)
    return " and ".join(f"({p})" for p in parts)


def _condition(cond: Condition, fields: dict[str, Any]) -> str | None:
    check_fields(Filters((cond,)), fields, where="this collection")
    spec = fields[cond.field]
    name, kind, is_list = spec["field"], spec["type"], spec["list"]
    tests: list[str] = []
    for wanted in cond.values:
        value = coerce(wanted, _SAMPLE[kind])
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue  # as in Condition.matches: a value of the wrong type matches nothing
        test = _test(name, kind, is_list, cond.op, value)
        if test is not None:
            tests.append(test)
    if not tests:
        return None
    joined = " or ".join(tests)
    return joined if is_list else f'array_contains(present, "{name}") and ({joined})'


def _test(name: str, kind: str, is_list: bool, op: Op, value: Scalar) -> str | None:
    if kind == "bool":
        ok = [b for b in (False, True) if holds(op, b, value)]
        if not ok:
            return None
        return f"array_contains_any({name}, [{', '.join(_literal(b) for b in ok)}])" if is_list \
            else " or ".join(f"{name} == {_literal(b)}" for b in ok)  # fmt: skip
    unbounded = (isinstance(value, int) and not _I64[0] <= value <= _I64[1]) or (
        isinstance(value, float) and math.isinf(value)
    )
    if unbounded:  # no stored value (i64, finite) equals it; a range covers all values or none
        if op == "eq" or (float(value) > 0) == (op in ("gt", "gte")):
            return None
        return f"array_length({name}) > 0" if is_list else f'array_contains(present, "{name}")'
    if is_list:
        if op == "eq":
            return f"array_contains({name}, {_literal(value)})"
        return " or ".join(f"{name}[{i}] {_OPS[op]} {_literal(value)}" for i in range(MAX_LIST))
    return f"{name} {_OPS[op]} {_literal(value)}"


def _literal(value: Scalar) -> str:
    """``value`` as a Milvus literal that cannot end the string or start a new expression."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value + 0.0)
        return text if any(c in text for c in ".e") else f"{text}.0"
    if "\n" in value or "\r" in value:
        raise FilterError(f"filter value {value!r} holds a line break",
                          "Milvus expressions cannot match text with line breaks")  # fmt: skip
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
