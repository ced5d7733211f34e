"""A wrapper that counts every LM call and token evaluated during one answer (O1, O3)."""

from __future__ import annotations

from flare.lm.base import ForwardingLM, LanguageModel
from flare.types import Completion


class MeteredLM(ForwardingLM):
    """Forwards to an LM and keeps per-answer totals: calls, prompt tokens, evaluated, generated."""

    def __init__(self, lm: LanguageModel) -> None:
        super().__init__(lm)
        self.calls = 0
        self.prompt_tokens = 0
        self.prompt_tokens_evaluated = 0
        self.generated_tokens = 0

    @property
    def tokens_evaluated(self) -> int:
        """Prompt tokens the model actually evaluated plus tokens it generated."""
        return self.prompt_tokens_evaluated + self.generated_tokens

    def _done(self, c: Completion, *, scored: bool) -> Completion:
        self.calls += 1
        self.prompt_tokens += c.prompt_tokens
        self.prompt_tokens_evaluated += c.prompt_tokens_evaluated
        if not scored:  # a score generates nothing: its continuation was given
            self.generated_tokens += c.generated_tokens
        return c

    def snapshot(self) -> tuple[int, int]:
        return self.calls, self.tokens_evaluated

    def since(self, snap: tuple[int, int]) -> tuple[int, int]:
        return self.calls - snap[0], self.tokens_evaluated - snap[1]
