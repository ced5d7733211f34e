"""Retriever spec strings: each opens (and builds) the backend it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from flare.errors import ConfigError, CorpusIndexError
from flare.retrieve.dense import DenseRetriever, MiniLMEmbedder
from flare.retrieve.hybrid import HybridRetriever
from flare.retrieve.milvus import MilvusRetriever
from flare.retrieve.registry import build_retriever, open_retriever, registered_retrievers
from flare.retrieve.tantivy_index import TantivyRetriever
from flare.testing.contracts import CONTRACT_CORPUS


def test_bm25_specs_and_plain_paths(tmp_path: Path) -> None:
    build_retriever(f"bm25:{tmp_path / 'ix'}", CONTRACT_CORPUS)
    for spec in (str(tmp_path / "ix"), f"bm25:{tmp_path / 'ix'}"):
        r = open_retriever(spec)
        assert isinstance(r, TantivyRetriever)
        assert r.search("capital of Germany", k=1)[0].passage.id == "berlin"


def test_bad_specs_are_config_errors(tmp_path: Path) -> None:
    assert registered_retrievers() == ["bm25", "dense", "hybrid", "milvus"]
    with pytest.raises(ConfigError, match="unknown retriever"):
        open_retriever("elastic:http://x")
    with pytest.raises(ConfigError, match="URI#COLLECTION"):
        open_retriever("milvus:./m.db")
    with pytest.raises(ConfigError, match="names no index"):
        open_retriever("dense:")
    with pytest.raises(CorpusIndexError):
        open_retriever(str(tmp_path / "missing"))


def test_dense_hybrid_and_milvus_specs(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    passages = CONTRACT_CORPUS[:4]
    build_retriever(f"dense:{tmp_path / 'd'}", passages, embedder=embedder)
    build_retriever(f"hybrid:{tmp_path / 'h'}", passages, embedder=embedder)
    uri = tmp_path / "m.db"
    build_retriever(f"milvus:{uri}#docs", passages, embedder=embedder)
    specs = {
        f"dense:{tmp_path / 'd'}": DenseRetriever,
        f"hybrid:{tmp_path / 'h'}": HybridRetriever,
        f"hybrid:{tmp_path / 'h' / 'bm25'},{tmp_path / 'd'}": HybridRetriever,
        f"milvus:{uri}#docs": MilvusRetriever,
        f"milvus:{uri}#docs:bm25": MilvusRetriever,
    }
    for spec, kind in specs.items():
        r = open_retriever(spec, embedder=embedder)
        assert isinstance(r, kind), spec
        assert r.search("capital of Germany", k=1)[0].passage.id == "berlin", spec
    assert isinstance(r, MilvusRetriever) and r.mode == "bm25"
