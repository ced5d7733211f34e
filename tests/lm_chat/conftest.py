"""llama.cpp's own server (the xllamacpp wheel, in-process) serving the bundled SmolLM2, and
proxies in front of it that strip logprobs or hide llama.cpp's extra endpoints."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from flare.lm.llama_server import LlamaServerModel
from flare.lm.registry import resolve_model
from tests.loopback_proxy import Proxy

HOSTED_HIDES = ("/props", "/version", "/tokenize", "/extras/tokenize")


@pytest.fixture(scope="session")
def served() -> Iterator[LlamaServerModel]:
    lm = resolve_model("xllamacpp:smollm2", n_threads=1, max_parallel=2, n_ctx=2048)
    assert isinstance(lm, LlamaServerModel)
    with lm:
        lm.load()
        yield lm


@pytest.fixture(scope="session")
def server_key(served: LlamaServerModel) -> str:
    """The random key the in-process server wants (its own client holds it)."""
    key: str = served._client()._client.headers["authorization"]
    return key.removeprefix("Bearer ")


@pytest.fixture(scope="session")
def stripped(served: LlamaServerModel, server_key: str) -> Iterator[Proxy]:
    """The same server, but no logprobs in any answer (llama.cpp's extras still answer)."""
    with Proxy(served.url.removesuffix("/v1"), server_key, strip_logprobs=True) as proxy:
        yield proxy


@pytest.fixture(scope="session")
def hosted(served: LlamaServerModel, server_key: str) -> Iterator[Proxy]:
    """The same server dressed as a hosted chat API: no logprobs, no /props, no tokenizer."""
    with Proxy(served.url.removesuffix("/v1"), server_key, strip_logprobs=True, hide=HOSTED_HIDES) as proxy:
        yield proxy
