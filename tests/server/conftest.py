"""Fixtures for the server tests: a tantivy index of a small corpus with ACLs, and SmolLM2."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flare.lm.llama import LlamaCppModel
from flare.lm.registry import resolve_model
from flare.retrieve.corpus import load_corpus
from flare.retrieve.tantivy_index import TantivyRetriever, build_index
from tests.server.support import write_corpus


@pytest.fixture(scope="session")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("server-index")
    corpus = write_corpus(root / "corpus.jsonl")
    build_index(load_corpus(corpus), root / "index")
    return root / "index"


@pytest.fixture()
def retriever(index_dir: Path) -> TantivyRetriever:
    return TantivyRetriever(index_dir)


@pytest.fixture(scope="session")
def smollm2() -> Iterator[LlamaCppModel]:
    """The bundled SmolLM2-135M (the fastest real model), loaded once."""
    # One thread: on a shared, oversubscribed CPU llama.cpp with 2 threads is 3-5x slower.
    lm = resolve_model("smollm2", n_threads=1, n_ctx=2048)
    assert isinstance(lm, LlamaCppModel)
    yield lm
    lm.close()
