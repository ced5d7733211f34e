"""flare inside LlamaIndex: an index searched under flare's filters, flare as a query engine."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("llama_index.core", reason="needs the llamaindex extra")
from llama_index.core import VectorStoreIndex
from llama_index.core.base.response.schema import Response, StreamingResponse
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

from flare import Filters, Flare, Settings
from flare.errors import FilterError, RetrieverError
from flare.integrations.llama_index import FlareQueryEngine, LlamaIndexRetriever
from flare.lm.llama import LlamaCppModel
from flare.retrieve.dense import MiniLMEmbedder
from flare.testing.contracts import MakeRetriever, RetrieverContract
from flare.types import Passage
from tests.integrations.li_support import llama_index
from tests.integrations.support import CHUNKS, CORPUS, QUESTION, script

PUBLIC = Filters.any_of("acl", ["public"])


class TestLlamaIndexContract(RetrieverContract):
    lexical = False

    @pytest.fixture(scope="class")
    @classmethod
    def make_retriever(cls, embedder: MiniLMEmbedder) -> MakeRetriever:
        def make(passages: list[Passage]) -> LlamaIndexRetriever:
            return LlamaIndexRetriever(llama_index(passages, embedder))

        return make



@pytest.fixture(scope="module")
def index(embedder: MiniLMEmbedder) -> VectorStoreIndex:
    return llama_index(CORPUS, embedder)


def engine(index: VectorStoreIndex) -> Flare:
    return Flare(script(), LlamaIndexRetriever(index), Settings(k=1))


def test_query_returns_the_rendered_answer_and_the_cited_nodes(index: VectorStoreIndex) -> None:
    response = FlareQueryEngine(engine(index), filters=PUBLIC).query(QUESTION)
    assert isinstance(response, Response) and response.response == "".join(CHUNKS)
    assert [n.node.node_id for n in response.source_nodes] == ["lh-1", "lh-2"]
    assert [n.node.metadata["n"] for n in response.source_nodes] == [1, 2]
    assert response.metadata is not None and response.metadata["retrievals"] == 3  # as in test_langchain
    again = asyncio.run(FlareQueryEngine(engine(index), filters=PUBLIC).aquery(QUESTION))
    assert str(again) == "".join(CHUNKS)


def test_streaming_yields_accepted_sentences_and_then_fills_the_sources(index: VectorStoreIndex) -> None:
    response = FlareQueryEngine(engine(index), filters=PUBLIC, streaming=True).query(QUESTION)
    assert isinstance(response, StreamingResponse) and response.source_nodes == []
    assert list(response.response_gen) == CHUNKS  # never the unsure draft ("coal")
    assert [n.node.node_id for n in response.source_nodes] == ["lh-1", "lh-2"]


def test_trusted_filters_decide_what_is_visible(index: VectorStoreIndex) -> None:
    board = FlareQueryEngine(engine(index), filters=Filters.any_of("acl", ["board"])).query(QUESTION)
    assert [n.node.node_id for n in board.source_nodes] == ["secret-1"]
    nothing = FlareQueryEngine(engine(index), filters=Filters.any_of("acl", [])).query(QUESTION)
    assert nothing.source_nodes == [] and nothing.metadata is not None
    assert nothing.metadata["stop_reason"] == "no_evidence"


def test_a_plain_retriever_refuses_filters_and_searches_without_them(index: VectorStoreIndex) -> None:
    r = LlamaIndexRetriever(index.as_retriever(similarity_top_k=3))
    with pytest.raises(FilterError, match="cannot apply filters") as info:
        r.search("lamp", k=2, filters=PUBLIC)
    assert "VectorStoreIndex" in info.value.hint
    hits = r.search("What did the lamp burn?", k=2)
    assert len(hits) == 2 and hits[0].passage.id in {"lh-2", "secret-1"}
    assert hits[0].score >= hits[1].score and r.search("", k=2) == []
    with pytest.raises(TypeError, match="VectorStoreIndex"):
        LlamaIndexRetriever("an index")  # type: ignore[arg-type]


def test_a_metadata_filter_translation_runs_in_the_vector_store_query(index: VectorStoreIndex) -> None:
    def acl_any(filters: Filters) -> MetadataFilters:
        wanted = [str(v) for v in filters.conditions[0].values]
        return MetadataFilters(filters=[MetadataFilter(key="acl", value=wanted, operator=FilterOperator.ANY)])

    r = LlamaIndexRetriever(index, filter_arg=acl_any)
    hits = r.search("Who will buy the lighthouse?", k=3, filters=PUBLIC)
    assert {h.passage.id for h in hits} == {"lh-1", "lh-2"}
    sloppy = LlamaIndexRetriever(index, filter_arg=lambda f: MetadataFilters(filters=[]))  # forgets the filter
    with pytest.raises(RetrieverError, match="'secret-1', which fails the filters"):
        sloppy.search("Who will buy the lighthouse?", k=3, filters=PUBLIC)


@pytest.mark.model
def test_real_model_answers_through_a_query_engine(index: VectorStoreIndex, smollm2: LlamaCppModel) -> None:
    flare = Flare(smollm2, LlamaIndexRetriever(index), Settings(max_sentences=2))
    response = FlareQueryEngine(flare, filters=PUBLIC, streaming=True).query(QUESTION)
    assert isinstance(response, StreamingResponse)
    text = "".join(response.response_gen)
    assert text.strip() and {n.node.node_id for n in response.source_nodes} <= {"lh-1", "lh-2"}
    assert "4.2 million" not in text
