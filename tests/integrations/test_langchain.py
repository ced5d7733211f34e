"""flare inside LangChain: a LangChain retriever under flare's filters, flare as a streaming Runnable."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("langchain_core", reason="needs the langchain extra")
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore

from flare import Filters, Flare, Settings
from flare.errors import FilterError, InputError, RetrieverError
from flare.integrations.langchain import FlareRunnable, LangChainRetriever
from flare.lm.llama import LlamaCppModel
from flare.retrieve.dense import MiniLMEmbedder
from flare.testing.contracts import MakeRetriever, RetrieverContract
from flare.types import Passage
from tests.integrations.lc_support import langchain_store
from tests.integrations.support import CHUNKS, CORPUS, QUESTION, script

PUBLIC = Filters.any_of("acl", ["public"])


class TestLangChainInMemoryContract(RetrieverContract):
    lexical = False

    @pytest.fixture(scope="class")
    @classmethod
    def make_retriever(cls, embedder: MiniLMEmbedder) -> MakeRetriever:
        def make(passages: list[Passage]) -> LangChainRetriever:
            return LangChainRetriever(langchain_store(passages, embedder).as_retriever())

        return make



@pytest.fixture(scope="module")
def store(embedder: MiniLMEmbedder) -> InMemoryVectorStore:
    return langchain_store(CORPUS, embedder)


def runnable(store: InMemoryVectorStore, filters: Filters = PUBLIC) -> FlareRunnable:
    return FlareRunnable(Flare(script(), LangChainRetriever(store.as_retriever()), Settings(k=1)), filters=filters)


def test_stream_yields_accepted_sentences_then_sources_and_adds_up_to_invoke(store: InMemoryVectorStore) -> None:
    chain = runnable(store)
    chunks = list(chain.stream(QUESTION))
    assert chunks == CHUNKS  # "coal", the unsure draft that was rewritten, is never streamed
    answer = chain.last_answer
    assert answer is not None
    assert chain.invoke(QUESTION) == "".join(CHUNKS) == answer.render()
    # The question's search, then the unbacked draft's: its own words and one hop through a name
    # its best document gives (the support trigger's queries).
    assert answer.retrievals == 3 and [c.passage_id for c in answer.sources] == ["lh-1", "lh-2"]
    assert asyncio.run(chain.ainvoke(QUESTION)) == "".join(CHUNKS)


def test_a_flagged_answer_streams_its_mark_first_and_its_note_last(store: InMemoryVectorStore) -> None:
    # The paper's trigger accepts the confident "coal", drafted with the lighthouse passage in
    # view, unsearched; verify=flag marks it.
    engine = Flare(script(sure_of_coal=True), LangChainRetriever(store.as_retriever()),
                   Settings(k=1, trigger="min", verify="flag", keep_first_docs=True))  # fmt: skip
    chain = FlareRunnable(engine, filters=PUBLIC)
    chunks = list(chain.stream(QUESTION))
    assert chunks[:2] == [CHUNKS[0], " Its lamp burned coal[?]."]
    answer = chain.last_answer
    assert answer is not None and "".join(chunks) == answer.render() == chain.invoke(QUESTION)
    assert chunks[-1].endswith('- sentence 2: "lamp burned coal" not found in the passages it was written from')


def test_it_composes_and_input_filters_only_narrow(store: InMemoryVectorStore) -> None:
    def board_only(question: str) -> dict[str, Any]:
        return {"question": question.strip(), "filters": ["acl=board"]}

    chain = RunnableLambda(board_only) | runnable(store)
    text = chain.invoke(f"  {QUESTION} ")
    assert "secret-1" not in text and "4.2" not in text  # public AND board: nothing at all
    only_lamp = runnable(store).invoke({"question": QUESTION, "filters": ["year>=1900"]})
    assert "(lh-2)" in only_lamp and "(lh-1)" not in only_lamp and "secret" not in only_lamp
    widened = runnable(store, filters=Filters.any_of("acl", ["board"])).invoke(QUESTION)
    assert "(secret-1)" in widened  # the trusted filters, not the input, decide what is visible


def test_bad_input_is_an_input_error(store: InMemoryVectorStore) -> None:
    chain = runnable(store)
    for bad in (42, {"q": QUESTION}, {"question": QUESTION, "filters": "year=1"}):
        with pytest.raises(InputError):
            chain.invoke(bad)  # type: ignore[arg-type]
    with pytest.raises(FilterError, match="colour"):
        chain.invoke({"question": QUESTION, "filters": ["colour=red"]})


class Fixed(BaseRetriever):
    """A real LangChain retriever with no metadata filtering unless it is given ``only_acl``."""

    docs: list[Document]
    calls: int = 0

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, only_acl: str | None = None, **kw: Any
    ) -> list[Document]:
        self.calls += 1
        return [d for d in self.docs if only_acl is None or only_acl in d.metadata.get("acl", [])]


DOCS = [Document(page_content=p.text, metadata={**p.meta, "title": p.title}, id=p.id) for p in CORPUS]


def test_a_retriever_that_cannot_filter_refuses_filters_before_searching() -> None:
    fixed = Fixed(docs=DOCS)
    r = LangChainRetriever(fixed)
    with pytest.raises(FilterError, match="cannot apply filters") as info:
        r.search("lamp", k=2, filters=PUBLIC)
    assert "filter_arg" in info.value.hint and fixed.calls == 0
    hits = r.search("lamp", k=2)
    assert [h.passage.id for h in hits] == ["lh-1", "lh-2"] and [h.score for h in hits] == [1.0, 0.5]
    assert hits[0].passage == CORPUS[0]  # title and id are the passage's own fields, not meta
    assert r.search("lamp", k=0) == [] and r.search("  ", k=3) == [] and fixed.calls == 1
    with pytest.raises(InputError):
        r.search("lamp", k=-1)


def test_filters_pass_through_a_translation_and_a_wrong_one_is_caught() -> None:
    def only_acl(filters: Filters) -> dict[str, Any]:
        return {"only_acl": filters.conditions[0].values[0]}

    r = LangChainRetriever(Fixed(docs=DOCS), filter_arg=only_acl, fields=["acl", "year"])
    assert [h.passage.id for h in r.search("lamp", k=5, filters=PUBLIC)] == ["lh-1", "lh-2"]
    with pytest.raises(FilterError, match="unknown filter field 'lang'"):
        r.search("lamp", k=5, filters=Filters.parse(["lang=en"]))
    sloppy = LangChainRetriever(Fixed(docs=DOCS), filter_arg=lambda f: {})  # forgets the filter
    with pytest.raises(RetrieverError, match="'secret-1', which fails the filters"):
        sloppy.search("lamp", k=5, filters=PUBLIC)


def test_documents_without_ids_get_stable_ones() -> None:
    r = LangChainRetriever(Fixed(docs=[Document(page_content="Alpha.")]))
    first, again = r.search("alpha", k=1), r.search("alpha", k=1)
    assert first[0].passage.id == again[0].passage.id and first[0].passage.id.startswith("sha1:")


@pytest.mark.model
def test_real_model_streams_through_langchain(store: InMemoryVectorStore, smollm2: LlamaCppModel) -> None:
    chain = FlareRunnable(Flare(smollm2, LangChainRetriever(store.as_retriever()), Settings(max_sentences=2)),
                          filters=PUBLIC)  # fmt: skip
    chunks = list(chain.stream(QUESTION))
    answer = chain.last_answer
    assert answer is not None
    assert "".join(chunks) == answer.render() and len(chunks) >= len(answer.sentences)
    assert answer.sentences and {c.passage_id for c in answer.sources} <= {"lh-1", "lh-2"}
