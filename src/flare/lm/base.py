"""The language-model contract the engine depends on, and the capabilities a model declares.

A backend is anything with a ``name``, the flags ``supports_logprobs`` / ``supports_logit_bias``,
``complete`` and ``count_tokens`` (:class:`LanguageModel`). The engine never checks a backend's
class. The optional capabilities have defaults, declared once in :class:`ModelBase`:

==========================  ==========  ==============================================================
capability                  default     meaning
==========================  ==========  ==============================================================
``supports_scoring``        ``False``   ``score(prompt, continuation)`` works (:class:`ScoringModel`)
``chat_template``           ``None``    the model's chat template; ChatML in it makes the engine
                                        write ChatML turns
``continuation``            ``None``    how a chat backend continues a partial answer (``prefill`` …)
``max_parallel``            ``1``       calls that may run at once from different threads
``load()`` / ``close()``    no-ops      open the model now (fail before serving) / free it
``reset_cache(keep)``       no-op       leave the prompt cache as if only ``keep`` had been evaluated
==========================  ==========  ==============================================================

A backend subclasses :class:`ModelBase` and declares what it has; the rest keeps the defaults::

    class EchoModel(ModelBase):
        name = "echo"
        supports_logprobs = False
        max_parallel = 4  # thread-safe: four calls at once

        def complete(self, prompt: str, *, max_tokens: int, stop: Sequence[str] = (),
                     stop_when: StopWhen | None = None,
                     logit_bias: Mapping[str, float] | None = None) -> Completion:
            return Completion(text=prompt[-max_tokens:], tokens=(), finish_reason="stop")

        def count_tokens(self, text: str) -> int:
            return len(text.split())

A model written against the bare protocol (no :class:`ModelBase`) keeps working: readers go
through :func:`declared`, which returns a :class:`ModelBase` view of any model, the declared
values where it has them and the defaults elsewhere. :class:`ForwardingLM` is the base of the
wrappers (metering, sharing between threads, a pool of copies): it forwards every call and
capability to an inner model, and a wrapper overrides only the hooks it adds to. This module is
the one place that reads a capability a model may not have.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, runtime_checkable

from flare.errors import ModelError
from flare.types import Completion

__all__ = ["ForwardingLM", "LanguageModel", "ModelBase", "ScoringModel", "StopWhen", "declared", "parallel_calls"]

StopWhen = Callable[[str], bool]
"""Called with the text generated so far; returning True ends generation (finish "sentence")."""


@runtime_checkable
class LanguageModel(Protocol):
    """A text-completion model that reports per-token probabilities.

    ``complete`` must be greedy (deterministic) unless the backend documents otherwise, must take
    each token's log-probability from the same decoding pass that produced it, and must merge
    byte tokens so that every :class:`~flare.types.TokenLogprob` holds whole characters.

    Backends are expected to reuse evaluated prompt prefixes: the engine orders every prompt as
    fixed header, documents, question, answer so far, and only ever appends.
    """

    name: str
    supports_logprobs: bool
    supports_logit_bias: bool

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int,
        stop: Sequence[str] = (),
        stop_when: StopWhen | None = None,
        logit_bias: Mapping[str, float] | None = None,
    ) -> Completion:
        """Continue ``prompt`` greedily for at most ``max_tokens`` tokens.

        ``stop`` sequences end generation and are not included in the text. ``stop_when`` lets
        the caller end generation early (the engine uses it to stop at the end of a sentence).
        ``logit_bias`` maps a piece of text (e.g. ``"["``) to an additive logit bias applied to
        every token whose text starts with it.
        """
        ...

    def count_tokens(self, text: str) -> int:
        """Number of tokens ``text`` encodes to (used for budgets and windows)."""
        ...


class ScoringModel(Protocol):
    """Optional capability: the log-probabilities of a *given* continuation (teacher forcing).

    A backend that has it sets ``supports_scoring = True``. The support checker uses it for the
    evidence lift (how much more likely the passages make a sentence's words); without it the
    checker uses its lexical signal alone. Like :meth:`LanguageModel.complete`, ``score`` should
    reuse a cached prompt prefix, and its tokens must join to exactly ``continuation``.
    """

    supports_scoring: bool

    def score(self, prompt: str, continuation: str) -> Completion:
        """``continuation``'s tokens, each with its log-probability given ``prompt`` and the
        tokens before it; ``text == continuation``, ``generated_tokens == 0``."""
        ...


class ModelBase(ABC):
    """A :class:`LanguageModel` with every optional capability declared, at its default.

    Subclass it, set ``name`` and the flags the backend has, implement ``complete`` and
    ``count_tokens``, and override the capabilities it has (see the module docstring). A flag
    set per instance in ``__init__`` is a plain attribute; ``chat_template`` and ``continuation``
    are properties here, so a backend may compute them lazily (or set a class attribute).
    """

    name: str
    supports_logprobs: bool = False
    supports_logit_bias: bool = False
    supports_scoring: bool = False
    max_parallel: int = 1

    @property
    def chat_template(self) -> str | None:
        """The model's chat template, if it has one (the engine picks ChatML turns from it)."""
        return None

    @property
    def continuation(self) -> str | None:
        """How a chat backend continues a partial answer (``prefill``, ``instruct`` …); None otherwise."""
        return None

    @abstractmethod
    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int,
        stop: Sequence[str] = (),
        stop_when: StopWhen | None = None,
        logit_bias: Mapping[str, float] | None = None,
    ) -> Completion:
        """See :meth:`LanguageModel.complete`."""

    @abstractmethod
    def count_tokens(self, text: str) -> int:
        """See :meth:`LanguageModel.count_tokens`."""

    def score(self, prompt: str, continuation: str) -> Completion:
        """See :class:`ScoringModel`; without the capability it raises :class:`ModelError`."""
        raise ModelError(
            f"model {self.name!r} cannot score a given text", "check supports_scoring before calling score"
        )

    def load(self) -> None:
        """Open the model now instead of on first use (fail before serving); a no-op by default."""
        return None

    def close(self) -> None:
        """Free what the model holds (files, connections, threads); a no-op by default."""
        return None

    def reset_cache(self, keep: str = "") -> None:
        """Leave the prompt cache as if only ``keep`` had been evaluated; a no-op by default.

        For a backend that reuses cached prompt prefixes (llama.cpp in-process; transformers
        forgets everything). ``flare eval`` calls it with the prompt header before every answer,
        so no method is timed with a prefix that another method's answer to the same question
        left in the cache.
        """
        return None


def declared(lm: LanguageModel) -> ModelBase:
    """``lm`` with every capability declared: itself if it derives from :class:`ModelBase`, else a
    :class:`ForwardingLM` over it that reads what it has and takes the defaults for the rest.

    Example: ``PromptTemplate.for_model(declared(lm).chat_template)``, ``declared(lm).load()``.
    """
    return lm if isinstance(lm, ModelBase) else ForwardingLM(lm)


def parallel_calls(lm: object) -> int:
    """How many calls of ``lm`` may run at once from different threads (at least 1).

    A backend that serves calls in parallel (a server with several slots, a thread-safe engine)
    says so with an integer attribute ``max_parallel``. Without it a model is one instance that
    must not be entered by two threads at once (llama.cpp in-process), so callers that share it,
    such as ``flare serve``, run its calls one at a time.
    """
    return _parallel(_optional(lm, "max_parallel"))


class ForwardingLM(ModelBase):
    """Forwards every call and capability to ``inner``; the base of the wrappers.

    A wrapper overrides only the hooks it adds to: :meth:`_using` (which model a call runs on,
    e.g. one held for the call), :meth:`_stop_when` (the early stop passed on) and :meth:`_done`
    (what happens to each completion or score once its call is over). The flags and ``name`` are
    read once, at construction; ``chat_template`` and ``continuation`` at each read (a backend
    may compute them lazily, e.g. llama.cpp reads its template from the weights).

    Example::

        class Counting(ForwardingLM):
            calls = 0

            def _done(self, c: Completion, *, scored: bool) -> Completion:
                self.calls += 1
                return c
    """

    def __init__(self, inner: LanguageModel) -> None:
        self.inner = inner
        self.name = inner.name
        self.supports_logprobs = inner.supports_logprobs
        self.supports_logit_bias = inner.supports_logit_bias
        self.supports_scoring = bool(_optional(inner, "supports_scoring"))
        self.max_parallel = parallel_calls(inner)

    @property
    def chat_template(self) -> str | None:
        """The inner model's chat template (None when it has none)."""
        template = _optional(self.inner, "chat_template")
        return template if isinstance(template, str) else None

    @property
    def continuation(self) -> str | None:
        """The inner model's continuation (None when it has none)."""
        how = _optional(self.inner, "continuation")
        return how if isinstance(how, str) else None

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int,
        stop: Sequence[str] = (),
        stop_when: StopWhen | None = None,
        logit_bias: Mapping[str, float] | None = None,
    ) -> Completion:
        """The inner model's ``complete`` (see :meth:`LanguageModel.complete`), through the hooks."""
        until = self._stop_when(stop_when)
        with self._using(prompt) as lm:
            c = lm.complete(prompt, max_tokens=max_tokens, stop=stop, stop_when=until, logit_bias=logit_bias)
        return self._done(c, scored=False)

    def score(self, prompt: str, continuation: str) -> Completion:
        """The inner model's ``score`` (see :class:`ScoringModel`), through the hooks."""
        with self._using(prompt) as lm:
            c = _score(lm, prompt, continuation)
        return self._done(c, scored=True)

    def count_tokens(self, text: str) -> int:
        with self._using(None) as lm:
            return lm.count_tokens(text)

    def load(self) -> None:
        _call_optional(self.inner, "load")

    def close(self) -> None:
        _call_optional(self.inner, "close")

    def reset_cache(self, keep: str = "") -> None:
        _call_optional(self.inner, "reset_cache", keep)

    @contextmanager
    def _using(self, prompt: str | None) -> Iterator[LanguageModel]:
        """The model a call runs on (``prompt`` is None for ``count_tokens``); default: ``inner``."""
        yield self.inner

    def _stop_when(self, stop_when: StopWhen | None) -> StopWhen | None:
        """The early stop given to the inner model; default: the caller's."""
        return stop_when

    def _done(self, c: Completion, *, scored: bool) -> Completion:
        """Called with each completion (``scored``: of ``score``) after its call; default: returns it."""
        return c


def _optional(lm: object, capability: str) -> Any:
    """The value of an optional capability, None where ``lm`` lacks it: the one place that looks."""
    return getattr(lm, capability, None)


def _parallel(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1


def _call_optional(lm: LanguageModel, method: str, *args: str) -> None:
    """Call ``lm``'s optional ``load`` / ``close`` / ``reset_cache``, if it has one."""
    fn = _optional(lm, method)
    if callable(fn):
        fn(*args)


def _score(lm: LanguageModel, prompt: str, continuation: str) -> Completion:
    if isinstance(lm, ModelBase):
        return lm.score(prompt, continuation)
    fn = _optional(lm, "score")
    if not callable(fn):
        raise ModelError(f"model {lm.name!r} cannot score a given text", "check supports_scoring before calling score")
    scored: Completion = fn(prompt, continuation)
    return scored
