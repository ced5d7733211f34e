"""Fixtures of the adapter tests: the real all-MiniLM-L6-v2 embedder and the real SmolLM2."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from flare.lm.llama import LlamaCppModel, default_model_path
from flare.retrieve.dense import MiniLMEmbedder


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    pytest.importorskip("sentence_transformers", reason="needs the dense extra")
    return MiniLMEmbedder(batch_size=32)


@pytest.fixture(scope="session")
def smollm2() -> Iterator[LlamaCppModel]:
    """The bundled SmolLM2 on one thread (the real-model path of both adapters)."""
    lm = LlamaCppModel(default_model_path(), name="smollm2", special_tokens=True, n_threads=1, n_ctx=2048)
    yield lm
    lm.close()
