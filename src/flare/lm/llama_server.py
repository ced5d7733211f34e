"""llama.cpp's own server engine inside this process (``xllamacpp``): parallel slots, one model.

:class:`LlamaServerModel` starts llama.cpp's C++ server from the ``xllamacpp`` wheel (a binary
wheel: nothing to compile) and talks to it with :class:`~flare.lm.openai_http.OpenAIHTTPModel`
over 127.0.0.1. The server decodes the requests of all its slots in one batch per step
(continuous batching), so ``max_parallel`` answers generate at once from one copy of the weights,
where the in-process :class:`~flare.lm.llama.LlamaCppModel` runs one call at a time. Each slot
keeps its prompt in its own KV cache, and llama.cpp sends a request to the slot whose cached
prompt it shares most with, so FLARE's growing prompts still reuse their prefixes.

The server listens on a free loopback port and wants a random key that only this object knows,
so other local processes cannot use it. Settings that keep results comparable with the
in-process backend: flash attention off, no weight repacking (AMX kernels die with SIGILL on
hosts that advertise AMX but do not allow it), full sliding-window caches (Gemma 3).

What differs from in-process (measured, see docs/backends.md): decoding several slots in one
batch rounds differently from decoding one, so the log-probabilities of a call can move slightly
with what else runs at the same time; and the server has no prompt log-probabilities.

Example::

    lm = LlamaServerModel(default_model_path(), max_parallel=4, n_threads=2)
    c = lm.complete("Question: What is the capital of France?\\nAnswer:", max_tokens=16)
    print(c.text, [round(t.prob, 2) for t in c.tokens])
    lm.close()
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flare.errors import ConfigError, ModelError
from flare.lm.base import ModelBase, StopWhen
from flare.lm.gguf import check_model_file, read_metadata_string
from flare.lm.openai_http import DEFAULT_EXTRA, OpenAIHTTPModel
from flare.types import Completion

__all__ = ["INSTALL_HINT", "LlamaServerModel"]

INSTALL_HINT = "pip install 'flare-rag[xllamacpp]'"


class LlamaServerModel(ModelBase):
    """A GGUF model served by llama.cpp's server engine in-process, with ``max_parallel`` slots.

    Construction is cheap; the model loads on first use or :meth:`load`. ``n_ctx`` is the window
    of each slot, ``n_threads`` the CPU threads of the whole server (default ``$FLARE_THREADS`` or
    cores - 1, as in-process). Implements :class:`~flare.lm.base.LanguageModel` and is safe to
    call from several threads at once: that is its point.
    """

    supports_logprobs = True
    supports_logit_bias = True
    supports_scoring = False  # the server has no prompt log-probabilities to score a given text

    def __init__(
        self,
        model_path: str | Path,
        *,
        max_parallel: int = 4,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        name: str | None = None,
        timeout: float = 600.0,
        verbose: bool = False,
    ) -> None:
        if max_parallel < 1:
            raise ConfigError(f"max_parallel must be ≥ 1, got {max_parallel}", "e.g. 4 slots")
        if n_ctx < 8:
            raise ConfigError(f"n_ctx must be at least 8, got {n_ctx}", hint="use e.g. 4096")
        from flare.lm.llama import _resolve_threads

        self.model_path = Path(model_path)
        self.name = name or f"xllamacpp:{self.model_path.stem}"
        self.max_parallel = max_parallel
        self.n_ctx = n_ctx
        self.n_threads = _resolve_threads(n_threads)
        self.timeout = timeout
        self.verbose = verbose
        self._lock = threading.Lock()
        self._server: Any = None
        self._http: OpenAIHTTPModel | None = None
        self._chat_template: str | None = None

    # -- LanguageModel -------------------------------------------------------------------------

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int,
        stop: Sequence[str] = (),
        stop_when: StopWhen | None = None,
        logit_bias: Mapping[str, float] | None = None,
    ) -> Completion:
        """Greedily continue ``prompt`` in a free slot (see :class:`~flare.lm.base.LanguageModel`)."""
        return self._client().complete(
            prompt, max_tokens=max_tokens, stop=stop, stop_when=stop_when, logit_bias=logit_bias
        )

    def count_tokens(self, text: str) -> int:
        """Number of tokens ``text`` encodes to, without the BOS token."""
        return self._client().count_tokens(text)

    @property
    def chat_template(self) -> str | None:
        """The chat template in the model file, if any (never applied automatically)."""
        self._client()
        return self._chat_template

    @property
    def url(self) -> str:
        """The server's ``/v1`` base URL on 127.0.0.1 (it wants this object's key)."""
        return self._client().base_url

    def load(self) -> None:
        """Start the server and load the model now instead of on first use."""
        self._client()

    def close(self) -> None:
        """Stop the server and free the model (a later call starts it again)."""
        with self._lock:
            if self._http is not None:
                self._http.close()
            self._http, self._server = None, None  # the server stops when it is released

    def __enter__(self) -> LlamaServerModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the server ----------------------------------------------------------------------------

    def _client(self) -> OpenAIHTTPModel:
        with self._lock:
            if self._http is None:
                self._http = self._start()
            return self._http

    def _start(self) -> OpenAIHTTPModel:
        path = self.model_path
        check_model_file(path)
        try:
            import xllamacpp
        except ImportError as err:
            raise ModelError("the xllamacpp backend needs the xllamacpp package", INSTALL_HINT) from err
        key = "sk-" + secrets.token_urlsafe(24)
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_parallel = self.max_parallel
        params.n_ctx = self.n_ctx * self.max_parallel  # the server splits it between the slots
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = self.n_threads
        params.flash_attn_type = xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
        params.no_extra_bufts = True
        params.swa_full = True
        params.warmup = False
        params.api_keys = [key]
        params.hostnames = ["127.0.0.1"]
        params.verbosity = 3 if self.verbose else -1
        try:
            server = xllamacpp.Server(params)
        except Exception as err:  # the extension raises plain RuntimeErrors
            raise ModelError(
                f"llama.cpp's server could not load {path}: {err}",
                hint="the file may be truncated or of an unsupported architecture; try verbose=True",
            ) from err
        http = OpenAIHTTPModel(
            f"{server.listening_address}/v1",
            path.name,
            api_key=key,
            timeout=self.timeout,
            max_retries=1,
            logprobs=True,
            name=self.name,
            max_parallel=self.max_parallel,
            # timings in every streamed chunk: prompt tokens evaluated vs reused from the slot's
            # cache, known even though the stream is closed at the end of a sentence
            extra={**DEFAULT_EXTRA, "timings_per_token": True},
        )
        self._server = server
        # The server reports ChatML for a model whose file has no template; read the file's own.
        self._chat_template = read_metadata_string(path, "tokenizer.chat_template")
        return http


def from_spec(rest: str, **options: Any) -> LlamaServerModel:
    """Build from the part of ``xllamacpp:MODEL`` after the prefix (registry factory).

    ``MODEL`` is a bundled model (``qwen1.5b``, the default, ``qwen0.5b``, ``smollm2``,
    ``gemma3``) or a ``.gguf`` path.
    ``n_contexts`` and ``special_tokens`` belong to the in-process backend and are ignored: each
    slot is its own cache, and the server always reads control-token spellings in prompts (the
    engine defuses them in documents and questions).
    """
    from flare.config import DEFAULT_MODEL
    from flare.lm.bundled import BUNDLED, assemble, default_model_path, gemma3_model_path

    for ignored in ("n_contexts", "special_tokens", "shift_cache"):
        options.pop(ignored, None)
    model = rest or DEFAULT_MODEL
    if model == "smollm2":
        return LlamaServerModel(default_model_path(), name="xllamacpp:smollm2", **options)
    if model == "gemma3":
        return LlamaServerModel(gemma3_model_path(), name="xllamacpp:gemma3", **options)
    if model in BUNDLED:
        return LlamaServerModel(assemble(BUNDLED[model]), name=f"xllamacpp:{model}", **options)
    file = Path(model).expanduser()
    if not file.is_file():
        raise ModelError(f"model file not found: {file}",
                         hint="use xllamacpp:qwen1.5b, xllamacpp:gemma3 or xllamacpp:PATH.gguf")  # fmt: skip
    return LlamaServerModel(file, **options)
