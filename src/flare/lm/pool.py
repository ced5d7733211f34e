"""Several copies of a one-call-at-a-time model, so that concurrent answers run side by side.

The in-process llama.cpp model takes one call at a time. :class:`ModelPool` holds ``size``
independent copies and gives each call a free one: ``flare serve --model gemma3
--max-parallel 2`` runs two answers' LM calls at once, each copy on its own ``--threads``. The
copies map the same GGUF file, so the weights are in memory once; each copy has its own KV
caches. Results do not depend on which copy runs a call: the copies are the same model with the
same kernels, and the in-process backend gives identical tokens and log-probabilities with or
without a cached prefix.

Prefix reuse survives: a call goes to the free copy whose recent prompts share the longest
prefix with it (FLARE's prompts only grow at the end, so an answer's next prompt extends one
that copy has cached), ties to the copy idle longest.

Example::

    pool = ModelPool(lambda: LlamaCppModel(gemma3_model_path(), n_threads=1), size=2)
    # two threads may now call pool.complete(...) at the same time
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from flare.errors import ConfigError
from flare.lm.base import ForwardingLM, LanguageModel, declared

__all__ = ["ModelPool"]

_REMEMBERED = 2  # prompts remembered per copy: FLARE's draft and regeneration prompt families


class ModelPool(ForwardingLM):
    """``size`` copies of a model made by ``make``; at most one call per copy at a time.

    Implements :class:`~flare.lm.base.LanguageModel` with ``max_parallel = size``; name, flags
    and chat template are the first copy's. Copies are made at construction (cheap for lazy
    backends such as llama.cpp: weights load on first use or :meth:`load`).
    """

    def __init__(self, make: Callable[[], LanguageModel], size: int) -> None:
        if size < 1:
            raise ConfigError(f"a model pool needs at least one copy, got {size}", "use --max-parallel 1 or more")
        self.copies = [make() for _ in range(size)]
        super().__init__(self.copies[0])
        self.max_parallel = size
        self._free = set(range(size))
        self._recent: list[deque[str]] = [deque(maxlen=_REMEMBERED) for _ in range(size)]
        self._idle_since = [0] * size
        self._clock = 0
        self._cond = threading.Condition()

    def load(self) -> None:
        """Load every copy now (fail before serving, not on the first request)."""
        for lm in self.copies:
            declared(lm).load()

    def close(self) -> None:
        """Close every copy that can be closed."""
        for lm in self.copies:
            declared(lm).close()

    def reset_cache(self, keep: str = "") -> None:
        """Reset every copy's prompt cache (see :meth:`~flare.lm.base.ModelBase.reset_cache`)."""
        with self._cond:
            for lm, recent in zip(self.copies, self._recent, strict=True):
                declared(lm).reset_cache(keep)
                recent.clear()

    @contextmanager
    def _using(self, prompt: str | None) -> Iterator[LanguageModel]:
        """A free copy, the one whose recent prompts share the longest prefix with ``prompt``."""
        with self._cond:
            self._cond.wait_for(lambda: bool(self._free))
            index = max(self._free, key=lambda i: (self._shared(i, prompt), -self._idle_since[i]))
            self._free.discard(index)
            if prompt is not None:
                self._recent[index].append(prompt)
        try:
            yield self.copies[index]
        finally:
            with self._cond:
                self._clock += 1
                self._idle_since[index] = self._clock
                self._free.add(index)
                self._cond.notify()

    def _shared(self, index: int, prompt: str | None) -> int:
        """Characters ``prompt`` shares with the most similar recent prompt of copy ``index``."""
        if not prompt:
            return 0
        return max((_common_prefix(p, prompt) for p in self._recent[index]), default=0)


def _common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of two strings (compared 256 characters at a time)."""
    n, i = min(len(a), len(b)), 0
    while i + 256 <= n and a[i : i + 256] == b[i : i + 256]:
        i += 256
    while i < n and a[i] == b[i]:
        i += 1
    return i
