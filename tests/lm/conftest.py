"""Shared fixtures for the LM backend tests: one SmolLM2 instance for the whole session.

Test models run on one thread unless ``FLARE_THREADS`` says otherwise: on a small machine shared
with other jobs, llama.cpp's spinning worker threads make two threads several times slower than
one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from flare.lm.llama import LlamaCppModel, default_model_path

TEST_THREADS = None if os.environ.get("FLARE_THREADS") else 1

MakeLlama = Callable[..., LlamaCppModel]


@pytest.fixture(scope="session")
def make_llama() -> Iterator[MakeLlama]:
    """Build a model (SmolLM2 unless ``model_path`` is given); all are closed at the end."""
    made: list[LlamaCppModel] = []

    def make(model_path: Path | None = None, **options: Any) -> LlamaCppModel:
        options.setdefault("n_threads", TEST_THREADS)
        lm = LlamaCppModel(model_path or default_model_path(), **options)
        made.append(lm)
        return lm

    yield make
    for lm in made:
        lm.close()


@pytest.fixture(scope="session")
def smollm2(make_llama: MakeLlama) -> LlamaCppModel:
    """The bundled SmolLM2-135M-Instruct, loaded once (tests must not rely on its cache state)."""
    return make_llama(n_ctx=2048)
