"""LangChain: any LangChain retriever as a flare retriever, and flare as a LangChain ``Runnable``.

Needs ``pip install 'flare-rag[langchain]'`` (langchain-core).

Filters are never dropped. A ``VectorStoreRetriever`` over LangChain's ``InMemoryVectorStore``
gets them as its ``filter`` function, with flare's exact semantics, inside the search. Any other
retriever gets them through ``filter_arg``, your translation of flare's
:class:`~flare.retrieve.filters.Filters` into the keyword its search takes (e.g. a vector store's
``filter=`` dict); without one, a search with filters raises :class:`~flare.errors.FilterError`
before anything runs. Every returned document is checked against the filters too, so a
translation that lets one through is an error, never a leak.

Example::

    from langchain_core.vectorstores import InMemoryVectorStore
    from flare import Filters, Flare, resolve_model
    from flare.integrations.langchain import FlareRunnable, LangChainRetriever

    store = InMemoryVectorStore(embeddings)          # any LangChain Embeddings
    store.add_documents(docs)                        # Documents with metadata like {"acl": [...]}
    engine = Flare(resolve_model("gemma3"), LangChainRetriever(store.as_retriever()))
    chain = FlareRunnable(engine, filters=Filters.any_of("acl", ["staff"]))
    for chunk in chain.stream("Who founded Northwind Labs?"):
        print(chunk, end="")                         # accepted sentences, then the sources
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from flare.engine.loop import Flare
from flare.integrations.common import (
    RESERVED,
    RenderedStream,
    check_k,
    passage_meta,
    question_and_filters,
    refuse,
    stable_id,
    within,
)
from flare.retrieve.base import check_fields
from flare.retrieve.filters import NO_FILTERS, Filters
from flare.types import Answer, Hit, Passage

try:
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import Runnable, RunnableConfig
    from langchain_core.vectorstores import InMemoryVectorStore, VectorStoreRetriever
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"flare.integrations.langchain needs langchain-core ({err.name} is missing): "
        "pip install 'flare-rag[langchain]'"
    ) from err

__all__ = ["FlareRunnable", "LangChainRetriever", "to_passage"]

FlareInput = str | Mapping[str, Any]
"""A question, or ``{"question": str, "filters": [expr, ...]}`` (those filters only narrow)."""


def to_passage(doc: Document) -> Passage:
    """A LangChain ``Document`` as a flare passage: id from ``doc.id`` or ``metadata["id"]``
    (else a hash of the text), title from ``metadata["title"]``, the other metadata as ``meta``."""
    pid = stable_id(doc.id or doc.metadata.get("id"), doc.page_content)
    return Passage(pid, doc.page_content, str(doc.metadata.get("title") or ""), passage_meta(doc.metadata))


class LangChainRetriever:
    """A LangChain ``BaseRetriever`` used as a flare retriever.

    ``filter_arg`` turns flare filters into keyword arguments for the wrapped retriever's search
    (a ``VectorStoreRetriever`` passes them on to its vector store), e.g.
    ``lambda f: {"filter": my_store_filter(f)}``. ``fields`` lists the metadata fields documents
    have, so that a filter on another field fails at once; for an ``InMemoryVectorStore`` both
    are known and need not be given. LangChain retrievers return no scores: hits are scored by
    rank, ``1 / (1 + rank)``.
    """

    def __init__(
        self,
        retriever: BaseRetriever,
        *,
        filter_arg: Callable[[Filters], Mapping[str, Any]] | None = None,
        fields: Iterable[str] | None = None,
        name: str = "langchain",
    ) -> None:
        self.retriever = retriever
        self.name = name
        self._fields = None if fields is None else list(fields)
        self._store = self._in_memory_store(retriever)
        self._filter_arg = filter_arg
        if filter_arg is None and self._store is not None:
            self._filter_arg = _in_memory_filter

    @staticmethod
    def _in_memory_store(retriever: BaseRetriever) -> InMemoryVectorStore | None:
        if isinstance(retriever, VectorStoreRetriever) and isinstance(retriever.vectorstore, InMemoryVectorStore):
            return retriever.vectorstore
        return None

    def fields(self) -> list[str] | None:
        """The metadata fields filters may name, or None when unknown (then any field is tried)."""
        if self._fields is not None:
            return self._fields
        if self._store is not None:
            keys = (k for item in self._store.store.values() for k in item["metadata"] if k not in RESERVED)
            return list(dict.fromkeys(keys))
        return None

    def check_filters(self, filters: Filters) -> None:
        if not filters:
            return
        if self._filter_arg is None:
            raise refuse(
                filters,
                f"the LangChain retriever {type(self.retriever).__name__}",
                "pass filter_arg= (flare Filters -> the retriever's filter keyword), or use a vector "
                "store retriever that filters by metadata",
            )
        known = self.fields()
        if known is not None:
            check_fields(filters, known, where=f"the {self.name} retriever")

    def search(self, query: str, *, k: int, filters: Filters = NO_FILTERS) -> list[Hit]:
        check_k(k)
        self.check_filters(filters)
        if k == 0 or not query.strip():
            return []
        kwargs: dict[str, Any] = {}
        if isinstance(self.retriever, VectorStoreRetriever):
            kwargs["k"] = k
        if filters and self._filter_arg is not None:
            kwargs.update(self._filter_arg(filters))
        docs = self.retriever.invoke(query, **kwargs)[:k]
        hits = [Hit(to_passage(d), 1.0 / (1 + rank)) for rank, d in enumerate(docs)]
        return within(hits, filters, f"the LangChain retriever {type(self.retriever).__name__}")


def _in_memory_filter(filters: Filters) -> dict[str, Any]:
    def keep(doc: Document) -> bool:
        return filters.matches(passage_meta(doc.metadata))

    return {"filter": keep}


class FlareRunnable(Runnable[FlareInput, str]):
    """A :class:`~flare.Flare` engine as a LangChain ``Runnable[str | dict, str]``.

    ``invoke`` returns the answer rendered with ``[n]`` markers and its source list;
    ``stream`` yields the same text in pieces, one per accepted sentence as soon as it is
    accepted, then the source list (a draft that is rewritten is never streamed). ``filters``
    are the trusted constraints (permissions) of every answer; an input's ``filters`` can only
    narrow them. After a call, :attr:`last_answer` holds the full :class:`~flare.Answer`.
    """

    def __init__(self, engine: Flare, *, filters: Filters = NO_FILTERS, name: str = "flare") -> None:
        self.engine = engine
        self.filters = filters
        self.name = name
        self.last_answer: Answer | None = None

    def invoke(self, input: FlareInput, config: RunnableConfig | None = None, **kwargs: Any) -> str:
        return self._call_with_config(self._render, input, config)

    def stream(self, input: FlareInput, config: RunnableConfig | None = None, **kwargs: Any | None) -> Iterator[str]:
        yield from self._transform_stream_with_config(iter([input]), self._chunks, config)

    def _render(self, input: FlareInput) -> str:
        return "".join(self._chunks(iter([input])))

    def _chunks(self, inputs: Iterator[FlareInput]) -> Iterator[str]:
        for value in inputs:
            question, filters = question_and_filters(value, self.filters)
            rendered = RenderedStream(self.engine, question, filters)
            yield from rendered
            self.last_answer = rendered.answer
