"""A real llama.cpp OpenAI-compatible server on a free port, shared by the HTTP backend tests.

The server and the in-process model load the same bundled SmolLM2 file and run on one thread
(on a small shared machine llama.cpp's spinning workers make more threads slower).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from flare.lm.llama import LlamaCppModel, default_model_path
from flare.lm.openai_http import OpenAIHTTPModel
from tests.lm_http.llama_server import llama_server


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    with llama_server(default_model_path(), threads=1) as url:
        yield url


@pytest.fixture(scope="session")
def http_lm(server_url: str) -> Iterator[OpenAIHTTPModel]:
    with OpenAIHTTPModel(server_url, timeout=300) as lm:
        yield lm


@pytest.fixture(scope="session")
def local_lm() -> Iterator[LlamaCppModel]:
    lm = LlamaCppModel(default_model_path(), n_threads=1, n_ctx=2048)
    yield lm
    lm.close()
