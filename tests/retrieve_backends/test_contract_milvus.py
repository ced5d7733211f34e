"""The shared retriever contract on Milvus Lite (the real Milvus engine, embedded), three modes.

The same collection code serves a Milvus cluster; only the URI differs.
"""

from __future__ import annotations

import itertools

import pytest

from flare.errors import CorpusIndexError, FilterError
from flare.retrieve.dense import MiniLMEmbedder
from flare.retrieve.filters import Condition, Filters
from flare.retrieve.milvus import MilvusRetriever, build_collection, filter_expression
from flare.testing.contracts import CONTRACT_CORPUS, MakeRetriever, RetrieverContract
from flare.types import Passage

pytest.importorskip("pymilvus", reason="needs the milvus extra")
_names = itertools.count()


def _maker(tmp_path_factory: pytest.TempPathFactory, mode: str, embedder: MiniLMEmbedder | None) -> MakeRetriever:
    uri = str(tmp_path_factory.mktemp("milvus") / "milvus.db")

    def make(passages: list[Passage]) -> MilvusRetriever:
        name = f"c{next(_names)}"
        build_collection(passages, uri, name, dense=embedder is not None, embedder=embedder)
        return MilvusRetriever(uri, name, mode=mode, embedder=embedder)

    return make


class TestMilvusBM25Contract(RetrieverContract):
    @pytest.fixture(scope="class")
    @classmethod
    def make_retriever(cls, tmp_path_factory: pytest.TempPathFactory) -> MakeRetriever:
        return _maker(tmp_path_factory, "bm25", None)


class TestMilvusDenseContract(RetrieverContract):
    lexical = False

    @pytest.fixture(scope="class")
    @classmethod
    def make_retriever(cls, tmp_path_factory: pytest.TempPathFactory, embedder: MiniLMEmbedder) -> MakeRetriever:
        return _maker(tmp_path_factory, "dense", embedder)


class TestMilvusHybridContract(RetrieverContract):
    lexical = False

    @pytest.fixture(scope="class")
    @classmethod
    def make_retriever(cls, tmp_path_factory: pytest.TempPathFactory, embedder: MiniLMEmbedder) -> MakeRetriever:
        return _maker(tmp_path_factory, "hybrid", embedder)


FIELDS = {
    "name": {"type": "str", "list": False, "field": "m0"},
    "acl": {"type": "str", "list": True, "field": "m1"},
    "year": {"type": "int", "list": False, "field": "m2"},
}


def test_expressions_quote_every_value() -> None:
    hostile = Filters((Condition("name", "eq", ('x" or id != "', "a\\", "ok")),))
    expr = filter_expression(hostile, FIELDS)
    assert expr == ('(array_contains(present, "m0") and (m0 == "x\\" or id != \\"" or m0 == "a\\\\" or m0 == "ok"))')
    assert filter_expression(Filters.any_of("acl", []), FIELDS) is None
    assert filter_expression(Filters.parse(["year>=x"]), FIELDS) is None  # wrong type: nothing
    assert filter_expression(Filters.parse(["year<99999999999999999999"]), FIELDS) == (
        '(array_contains(present, "m2") and (array_contains(present, "m2")))'
    )
    with pytest.raises(FilterError, match="line break"):
        filter_expression(Filters((Condition("name", "eq", ("a\nb",)),)), FIELDS)
    with pytest.raises(FilterError, match="unknown filter field"):
        filter_expression(Filters.parse(["colour=red"]), FIELDS)


def test_hostile_values_match_only_themselves(tmp_path_factory: pytest.TempPathFactory) -> None:
    values = ['q" or 1==1 or m0 == "', "back\\slash", "trail\\", '\\"', "single'quote", "tab\there", "{v}"]
    docs = [Passage(f"d{i}", "same text", "", {"name": v}) for i, v in enumerate(values)]
    make = _maker(tmp_path_factory, "bm25", None)
    r = make(docs)
    for i, v in enumerate(values):
        hits = r.search("same text", k=20, filters=Filters((Condition("name", "eq", (v,)),)))
        assert [h.passage.id for h in hits] == [f"d{i}"], v


def test_existing_collection_is_kept_unless_replaced(tmp_path_factory: pytest.TempPathFactory) -> None:
    uri = str(tmp_path_factory.mktemp("milvus") / "m.db")
    build_collection(CONTRACT_CORPUS[:2], uri, "docs", dense=False)
    with pytest.raises(CorpusIndexError, match="exists"):
        build_collection(CONTRACT_CORPUS[:1], uri, "docs", dense=False)
    build_collection(CONTRACT_CORPUS[:1], uri, "docs", dense=False, replace=True)
    r = MilvusRetriever(uri, "docs")
    assert r.mode == "bm25" and len(r) == 1
    with pytest.raises(CorpusIndexError, match="no dense vectors"):
        MilvusRetriever(uri, "docs", mode="hybrid").search("x", k=1)
    with pytest.raises(CorpusIndexError, match="no collection"):
        MilvusRetriever(uri, "missing").search("x", k=1)
