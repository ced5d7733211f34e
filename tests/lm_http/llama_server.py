"""Start a real ``llama_cpp.server`` (OpenAI-compatible) for tests and benchmarks.

Run as a script it *is* the server: ``python tests/lm_http/llama_server.py --model M --port P``
takes the same options as ``python -m llama_cpp.server``. Two settings make its output match the
in-process :class:`~flare.lm.llama.LlamaCppModel` token for token:

* weight repacking (llama.cpp "extra buffer types") is switched off, as in-process does: its AMX
  kernels die with SIGILL on hosts that advertise AMX but do not allow it (this sandbox), and the
  server has no flag for it;
* flash attention stays off (the server's default, and the in-process setting).

Imported, :func:`llama_server` starts that script on a free port and stops it afterwards.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx


def _serve() -> None:
    import llama_cpp.llama_cpp as capi

    default_params = capi.llama_model_default_params

    def model_params() -> object:
        params = default_params()
        params.use_extra_bufts = False
        return params

    capi.llama_model_default_params = model_params
    from llama_cpp.server.__main__ import main

    main()  # type: ignore[no-untyped-call]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def llama_server(model: Path, *, threads: int = 1, n_ctx: int = 2048) -> Iterator[str]:
    """Yield the ``/v1`` base URL of a server for ``model``; its log goes to a temp file."""
    port = free_port()
    cmd = [sys.executable, __file__, "--model", str(model), "--host", "127.0.0.1",
           "--port", str(port), "--n_threads", str(threads), "--n_threads_batch", str(threads),
           "--n_ctx", str(n_ctx), "--verbose", "False"]  # fmt: skip
    with tempfile.NamedTemporaryFile("w+", prefix="llama-server-", suffix=".log") as log:
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            url = f"http://127.0.0.1:{port}/v1"
            _wait_ready(url, proc, log.name)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama server exited with {proc.returncode}: {Path(log).read_text()}")
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    raise RuntimeError(f"llama server not ready after {timeout}s: {Path(log).read_text()[-2000:]}")


if __name__ == "__main__":
    _serve()
