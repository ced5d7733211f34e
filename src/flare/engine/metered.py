"""A wrapper that counts every LM call and token evaluated during one answer (O1, O3)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from flare.lm.base import LanguageModel, ScoringModel, StopWhen
from flare.types import Completion


class MeteredLM:
    """Forwards to an LM and keeps per-answer totals: calls, prompt tokens, evaluated, generated."""

    def __init__(self, lm: LanguageModel) -> None:
        self.lm = lm
        self.name = lm.name
        self.supports_logprobs = lm.supports_logprobs
        self.supports_logit_bias = lm.supports_logit_bias
        self.supports_scoring: bool = bool(getattr(lm, "supports_scoring", False))
        self.calls = 0
        self.prompt_tokens = 0
        self.prompt_tokens_evaluated = 0
        self.generated_tokens = 0

    @property
    def tokens_evaluated(self) -> int:
        """Prompt tokens the model actually evaluated plus tokens it generated."""
        return self.prompt_tokens_evaluated + self.generated_tokens

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int,
        stop: Sequence[str] = (),
        stop_when: StopWhen | None = None,
        logit_bias: Mapping[str, float] | None = None,
    ) -> Completion:
        c = self.lm.complete(
            prompt, max_tokens=max_tokens, stop=stop, stop_when=stop_when, logit_bias=logit_bias
        )
        self.calls += 1
        self.prompt_tokens += c.prompt_tokens
        self.prompt_tokens_evaluated += c.prompt_tokens_evaluated
        self.generated_tokens += c.generated_tokens
        return c

    def score(self, prompt: str, continuation: str) -> Completion:
        """Forward to the backend's ``score`` (see :class:`~flare.lm.base.ScoringModel`)."""
        scorer: ScoringModel = self.lm  # type: ignore[assignment]
        c = scorer.score(prompt, continuation)
        self.calls += 1
        self.prompt_tokens += c.prompt_tokens
        self.prompt_tokens_evaluated += c.prompt_tokens_evaluated
        return c

    def count_tokens(self, text: str) -> int:
        return self.lm.count_tokens(text)

    def snapshot(self) -> tuple[int, int]:
        return self.calls, self.tokens_evaluated

    def since(self, snap: tuple[int, int]) -> tuple[int, int]:
        return self.calls - snap[0], self.tokens_evaluated - snap[1]
