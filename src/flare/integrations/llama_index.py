"""LlamaIndex: an index or retriever as a flare retriever, and flare as a LlamaIndex query engine.

Needs ``pip install 'flare-rag[llamaindex]'`` (llama-index-core).

Filters are never dropped. Given ``filter_arg``, your translation of flare's
:class:`~flare.retrieve.filters.Filters` into LlamaIndex ``MetadataFilters``, a
``VectorStoreIndex`` gets them in its vector store query (what an external vector store needs).
Without one, an index whose nodes live in its docstore (the default in-memory
``SimpleVectorStore``) is searched only among the nodes whose metadata pass the filters, with
flare's exact semantics, inside the search. A plain retriever, or an external store without a
translation, raises :class:`~flare.errors.FilterError` for any filter before anything runs.
Every returned node is checked against the filters too, so a translation that lets one through
is an error, never a leak.

Example::

    from llama_index.core import VectorStoreIndex
    from flare import Filters, Flare, resolve_model
    from flare.integrations.llama_index import FlareQueryEngine, LlamaIndexRetriever

    index = VectorStoreIndex(nodes, embed_model=embed_model)   # nodes with metadata {"acl": [...]}
    engine = Flare(resolve_model("gemma3"), LlamaIndexRetriever(index))
    query_engine = FlareQueryEngine(engine, filters=Filters.any_of("acl", ["staff"]))
    response = query_engine.query("Who founded Northwind Labs?")
    print(response, [n.node.node_id for n in response.source_nodes])
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
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
    from llama_index.core import VectorStoreIndex
    from llama_index.core.base.base_query_engine import BaseQueryEngine
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.base.response.schema import RESPONSE_TYPE, Response, StreamingResponse
    from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
    from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle, TextNode
    from llama_index.core.vector_stores.types import MetadataFilters
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"flare.integrations.llama_index needs llama-index-core ({err.name} is missing): "
        "pip install 'flare-rag[llamaindex]'"
    ) from err

__all__ = ["FlareQueryEngine", "LlamaIndexRetriever", "to_passage"]


def to_passage(node: BaseNode) -> Passage:
    """A LlamaIndex node as a flare passage: its id, its text without metadata, title from
    ``metadata["title"]``, the other metadata as ``meta``."""
    text = node.get_content(metadata_mode=MetadataMode.NONE)
    title = str(node.metadata.get("title") or "")
    return Passage(stable_id(node.node_id, text), text, title, passage_meta(node.metadata))


class LlamaIndexRetriever:
    """A LlamaIndex ``VectorStoreIndex`` (or any ``BaseRetriever``) used as a flare retriever.

    ``filter_arg`` turns flare filters into ``MetadataFilters`` for an index over an external
    vector store. ``fields`` lists the metadata fields nodes have, so that a filter on another
    field fails at once; for an index whose docstore holds its nodes it is read from them. A
    hit's score is the node's score (rank-based, ``1 / (1 + rank)``, when it has none).
    """

    def __init__(
        self,
        source: VectorStoreIndex | BaseRetriever,
        *,
        filter_arg: Callable[[Filters], MetadataFilters] | None = None,
        fields: Iterable[str] | None = None,
        name: str = "llama_index",
    ) -> None:
        if not isinstance(source, VectorStoreIndex | BaseRetriever):
            raise TypeError(f"expected a VectorStoreIndex or a LlamaIndex BaseRetriever, got {type(source).__name__}")
        self.source = source
        self.name = name
        self._filter_arg = filter_arg
        self._fields = None if fields is None else list(fields)

    def _docstore_nodes(self) -> dict[str, BaseNode] | None:
        """Every node, when the index keeps them in its docstore (an in-memory vector store)."""
        if isinstance(self.source, VectorStoreIndex) and not self.source.vector_store.stores_text:
            return dict(self.source.docstore.docs)
        return None

    def fields(self) -> list[str] | None:
        """The metadata fields filters may name, or None when unknown (then any field is tried)."""
        if self._fields is not None:
            return self._fields
        nodes = self._docstore_nodes()
        if nodes is None:
            return None
        return list(dict.fromkeys(k for node in nodes.values() for k in node.metadata if k not in RESERVED))

    def check_filters(self, filters: Filters) -> None:
        if not filters:
            return
        translated = self._filter_arg is not None and isinstance(self.source, VectorStoreIndex)
        if not translated and self._docstore_nodes() is None:
            raise refuse(
                filters,
                f"the LlamaIndex {type(self.source).__name__}",
                "wrap a VectorStoreIndex, with filter_arg= (flare Filters -> MetadataFilters) when its "
                "vector store is external",
            )
        known = self.fields()
        if known is not None:
            check_fields(filters, known, where=f"the {self.name} retriever")

    def search(self, query: str, *, k: int, filters: Filters = NO_FILTERS) -> list[Hit]:
        check_k(k)
        self.check_filters(filters)
        if k == 0 or not query.strip():
            return []
        found = self._retriever(k, filters)
        if found is None:
            return []
        results = found.retrieve(query)[:k]
        hits = [Hit(to_passage(r.node), r.score if r.score is not None else 1.0 / (1 + rank))
                for rank, r in enumerate(results)]  # fmt: skip
        hits.sort(key=lambda h: -h.score)
        return within(hits, filters, f"the LlamaIndex {type(self.source).__name__}")

    def _retriever(self, k: int, filters: Filters) -> BaseRetriever | None:
        """The retriever for one search, or None when the filters allow no node at all."""
        if not isinstance(self.source, VectorStoreIndex):
            return self.source
        if not filters:
            return self.source.as_retriever(similarity_top_k=k)
        if self._filter_arg is not None:
            return self.source.as_retriever(similarity_top_k=k, filters=self._filter_arg(filters))
        nodes = self._docstore_nodes()
        if nodes is not None:
            allowed = {nid for nid, node in nodes.items() if filters.matches(passage_meta(node.metadata))}
            # The index maps vector-store ids to node ids; a search is restricted by the former.
            vector_ids = [vid for vid, nid in self.source.index_struct.nodes_dict.items() if nid in allowed]
            if not vector_ids:
                return None
            return VectorIndexRetriever(self.source, similarity_top_k=k, node_ids=vector_ids,
                                        callback_manager=self.source._callback_manager,
                                        object_map=self.source._object_map)  # fmt: skip
        raise AssertionError("check_filters refuses filters it cannot apply")  # pragma: no cover


class FlareQueryEngine(BaseQueryEngine):
    """A :class:`~flare.Flare` engine as a LlamaIndex query engine.

    ``query`` returns a ``Response`` whose text is the answer rendered with ``[n]`` markers and
    its source list, and whose ``source_nodes`` are the cited passages (``metadata["n"]`` is the
    marker). With ``streaming=True`` it returns a ``StreamingResponse`` whose ``response_gen``
    yields each accepted sentence as soon as it is accepted, then the source list; its
    ``source_nodes`` fill in when the stream ends. ``filters`` are the trusted constraints of
    every answer; a query's ``custom_embedding_strs`` are ignored.
    """

    def __init__(self, engine: Flare, *, filters: Filters = NO_FILTERS, streaming: bool = False) -> None:
        super().__init__(callback_manager=None)
        self.engine = engine
        self.filters = filters
        self.streaming = streaming

    def _get_prompt_modules(self) -> dict[str, Any]:
        return {}

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        question, filters = question_and_filters(query_bundle.query_str, self.filters)
        rendered = RenderedStream(self.engine, question, filters)
        if not self.streaming:
            text = "".join(rendered)
            assert rendered.answer is not None
            return Response(text, source_nodes=_source_nodes(rendered.answer), metadata=_metadata(rendered.answer))
        response = StreamingResponse(response_gen=_nothing(), source_nodes=[], metadata={})

        def chunks() -> Generator[str, None, None]:
            yield from rendered
            assert rendered.answer is not None
            response.source_nodes.extend(_source_nodes(rendered.answer))
            response.metadata = _metadata(rendered.answer)

        response.response_gen = chunks()
        return response

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        return self._query(query_bundle)  # the engine is synchronous: one answer, one thread


def _nothing() -> Generator[str, None, None]:
    yield from ()


def _source_nodes(answer: Answer) -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(id_=c.passage_id, text=c.text, metadata={"title": c.title, "n": c.n}))
            for c in answer.sources]  # fmt: skip


def _metadata(answer: Answer) -> dict[str, Any]:
    return {"stop_reason": answer.stop_reason, "retrievals": answer.retrievals, "trace_id": answer.trace_id}
