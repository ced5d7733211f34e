"""The shared retriever contract on the embedded backends: tantivy BM25, dense, hybrid."""

from __future__ import annotations

from pathlib import Path

import pytest

from flare.retrieve.dense import DenseRetriever, MiniLMEmbedder, build_dense_index
from flare.retrieve.hybrid import HybridRetriever, build_hybrid_index
from flare.retrieve.tantivy_index import TantivyRetriever, build_index
from flare.testing.contracts import MakeRetriever, RetrieverContract
from flare.types import Passage


class TestTantivyContract(RetrieverContract):
    @pytest.fixture(scope="class")
    @classmethod
    def make_retriever(cls, tmp_path_factory: pytest.TempPathFactory) -> MakeRetriever:
        def make(passages: list[Passage]) -> TantivyRetriever:
            path = tmp_path_factory.mktemp("bm25") / "index"
            build_index(passages, path)
            return TantivyRetriever(path)

        return make


class TestDenseContract(RetrieverContract):
    lexical = False

    @pytest.fixture(scope="class")
    @classmethod
    def make_retriever(cls, tmp_path_factory: pytest.TempPathFactory, embedder: MiniLMEmbedder) -> MakeRetriever:
        def make(passages: list[Passage]) -> DenseRetriever:
            path = tmp_path_factory.mktemp("dense") / "index"
            build_dense_index(passages, path, embedder=embedder)
            return DenseRetriever(path, embedder=embedder)

        return make


class TestHybridContract(RetrieverContract):
    lexical = False

    @pytest.fixture(scope="class")
    @classmethod
    def make_retriever(cls, tmp_path_factory: pytest.TempPathFactory, embedder: MiniLMEmbedder) -> MakeRetriever:
        def make(passages: list[Passage]) -> HybridRetriever:
            path: Path = tmp_path_factory.mktemp("hybrid") / "index"
            build_hybrid_index(passages, path, embedder=embedder)
            return HybridRetriever.open(path, embedder=embedder)

        return make
