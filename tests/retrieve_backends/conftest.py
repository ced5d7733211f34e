"""One all-MiniLM-L6-v2 embedder for the whole session (loading it takes seconds)."""

from __future__ import annotations

import pytest

from flare.retrieve.dense import MiniLMEmbedder


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    pytest.importorskip("sentence_transformers", reason="needs the dense extra")
    return MiniLMEmbedder(batch_size=32)
