"""The language-model contract the engine depends on.

A backend is anything with a ``name``, capability flags and one ``complete`` method. The engine
never checks a backend's class: it reads ``supports_logprobs`` / ``supports_logit_bias``, and
``supports_scoring`` for the optional :class:`ScoringModel` method ``score``. Callers that share
one model between threads read the optional ``max_parallel`` (see :func:`parallel_calls`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from flare.types import Completion

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


def parallel_calls(lm: object) -> int:
    """How many calls of ``lm`` may run at once from different threads (at least 1).

    A backend that serves calls in parallel (a server with several slots, a thread-safe engine)
    says so with an integer attribute ``max_parallel``. Without it a model is one instance that
    must not be entered by two threads at once (llama.cpp in-process), so callers that share it,
    such as ``flare serve``, run its calls one at a time.
    """
    value = getattr(lm, "max_parallel", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1
