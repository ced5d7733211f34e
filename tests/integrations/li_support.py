"""LlamaIndex pieces for the adapter tests: flare's MiniLM embedder as a LlamaIndex embedding."""

from __future__ import annotations

from typing import Any

from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.schema import TextNode
from pydantic import PrivateAttr

from flare.retrieve.dense import MiniLMEmbedder
from flare.types import Passage


class LlamaMiniLM(BaseEmbedding):
    """flare's MiniLM embedder as a LlamaIndex embedding model."""

    _embedder: Any = PrivateAttr()

    def __init__(self, embedder: MiniLMEmbedder) -> None:
        super().__init__(model_name=embedder.name)
        self._embedder = embedder

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embeddings([query])[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self._embedder.embed(texts)]


def llama_index(passages: list[Passage], embedder: MiniLMEmbedder) -> VectorStoreIndex:
    nodes = []
    for p in passages:
        meta = {**p.meta, "title": p.title}
        # Embed title and text, as flare's dense index does, not the metadata's key: value lines.
        nodes.append(TextNode(id_=p.id, text=p.text, metadata=meta,
                              excluded_embed_metadata_keys=[k for k in meta if k != "title"]))  # fmt: skip
    return VectorStoreIndex(nodes, embed_model=LlamaMiniLM(embedder))
