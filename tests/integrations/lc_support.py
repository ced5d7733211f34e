"""LangChain pieces for the adapter tests: flare's MiniLM embedder as LangChain ``Embeddings``."""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from flare.retrieve.dense import MiniLMEmbedder
from flare.types import Passage


class LangChainMiniLM(Embeddings):
    """flare's MiniLM embedder as LangChain ``Embeddings``."""

    def __init__(self, embedder: MiniLMEmbedder) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self.embedder.embed(texts)]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def langchain_store(passages: list[Passage], embedder: MiniLMEmbedder) -> InMemoryVectorStore:
    store = InMemoryVectorStore(LangChainMiniLM(embedder))
    docs = [Document(page_content=p.text, metadata={**p.meta, "title": p.title}, id=p.id) for p in passages]
    store.add_documents(docs)
    return store
