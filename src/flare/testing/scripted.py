"""A deterministic, scripted :class:`~flare.lm.base.LanguageModel` for testing the engine.

Real models are slow and their output drifts between versions; engine tests need to say
"when the prompt looks like this, the model drafts that sentence, and this word is unsure".
:class:`ScriptedLM` does exactly that, and it follows the same ``stop`` / ``stop_when`` /
``max_tokens`` rules as the llama.cpp backend, so a loop that works here behaves the same on a
real model.

Example::

    from flare.testing.scripted import ScriptedLM

    lm = ScriptedLM(
        [
            # Regeneration prompts carry documents: answer confidently from them.
            ("Search results", ScriptedLM.sentence(" Paris is the capital.")),
            # Draft prompts: the model is unsure about the city.
            ("Question:", ScriptedLM.sentence(" Lyon is the capital.", low={"Lyon": 0.1})),
        ]
    )
    draft = lm.complete("Question: capital of France?\\nAnswer:", max_tokens=32)
    assert min(t.prob for t in draft.tokens) == 0.1
    assert lm.calls == ["Question: capital of France?\\nAnswer:"]
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from flare.lm.base import ModelBase, StopWhen
from flare.lm.stops import append_piece
from flare.text import HAN
from flare.types import Completion, FinishReason, TokenLogprob

__all__ = ["Response", "Rule", "ScriptError", "ScriptedCall", "ScriptedLM"]

Response = Sequence[tuple[str, float]]
"""What the model says: ``(token_text, probability)`` pairs, in order."""

PromptMatch = str | Callable[[str], bool]
"""A substring the prompt must contain, or a predicate over the whole prompt."""

Rule = tuple[PromptMatch, Response]

# Word-ish pieces with their leading whitespace: a run of letters/digits, one Han character (as
# byte-level tokenisers mostly do for Chinese), or one punctuation mark; trailing whitespace is a
# piece of its own so that the pieces always join back to the exact input.
_PIECE = re.compile(rf"\s*(?:[{HAN}]|[^\W{HAN}]+|[^\w\s])|\s+")


class ScriptError(AssertionError):
    """No rule matched a prompt: the test's script does not cover this call."""


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """One recorded call to :meth:`ScriptedLM.complete`, with every argument."""

    prompt: str
    max_tokens: int
    stop: tuple[str, ...]
    logit_bias: Mapping[str, float] | None
    completion: Completion = field(repr=False)


class ScriptedLM(ModelBase):
    """A fake language model that answers prompts from a list of rules.

    Each rule is ``(match, response)``: ``match`` is a substring of the prompt or a predicate
    over it, and ``response`` is the sequence of ``(token_text, probability)`` pairs the model
    "generates". The first matching rule wins. Generation then follows the backend contract:

    * ``stop`` strings end generation and are cut from the text and the tokens (finish "stop");
    * ``stop_when(text_so_far)`` is checked after every token (finish "sentence");
    * ``max_tokens`` cuts a longer response (finish "length");
    * reaching the end of the response is the model ending its text (finish "stop");
    * ``logit_bias`` keeps OpenAI's meaning of ±100: a bias of +100 or more on a piece of text
      makes the model say that piece at every step (probability 1), one of -100 or less skips
      every scripted token that starts with it (with or without its leading space); smaller
      biases are recorded but change nothing, since the script already says what is likely.

    ``supports_logprobs=False`` imitates a backend without probabilities: completions then carry
    no tokens, only text. Every prompt is appended to :attr:`calls`, and every call with all of
    its arguments to :attr:`requests`. ``chat_template`` is None (plain prompts); set it to a
    template with ChatML in it to make the engine write ChatML turns.
    """

    chat_template: str | None = None

    def __init__(
        self,
        rules: Iterable[Rule] = (),
        *,
        name: str = "scripted",
        supports_logprobs: bool = True,
        supports_logit_bias: bool = True,
        supports_scoring: bool = True,
        unknown_prob: float = 0.01,
    ) -> None:
        self.name = name
        self.supports_logprobs = supports_logprobs
        self.supports_logit_bias = supports_logit_bias
        self.supports_scoring = supports_scoring
        self.unknown_prob = unknown_prob
        self.scored: list[tuple[str, str]] = []
        self.rules: list[Rule] = []
        self.calls: list[str] = []
        self.requests: list[ScriptedCall] = []
        for match, response in rules:
            self.add(match, response)

    def add(self, match: PromptMatch, response: Response) -> ScriptedLM:
        """Append a rule (checked after the existing ones); returns ``self`` for chaining."""
        for piece, prob in response:
            if not 0.0 < prob <= 1.0:
                raise ValueError(f"probability of {piece!r} must be in (0, 1], got {prob}")
        self.rules.append((match, tuple(response)))
        return self

    @staticmethod
    def split(text: str) -> list[str]:
        """Split ``text`` into word-ish tokens that keep their leading spaces.

        ``"The capital is Paris."`` → ``["The", " capital", " is", " Paris", "."]``; Chinese is
        split one character per token. The pieces always join back to ``text``.
        """
        pieces = _PIECE.findall(text)
        if "".join(pieces) != text:  # the pattern covers every character; guard regressions
            raise AssertionError(f"tokenisation lost characters of {text!r}")
        return pieces

    @classmethod
    def sentence(
        cls,
        text: str,
        *,
        low: Mapping[str, float] | None = None,
        default_prob: float = 0.95,
    ) -> list[tuple[str, float]]:
        """A response that says ``text``, every token at ``default_prob``.

        ``low`` maps a token's text (without its leading space) to the probability it should get
        instead, e.g. ``low={"Paris": 0.1}``. A key that names no token raises ``ValueError``, so
        a typo cannot silently make a test pass.
        """
        low = dict(low or {})
        pieces = cls.split(text)
        unused = set(low) - {p.strip() for p in pieces}
        if unused:
            raise ValueError(f"low names no token of {text!r}: {sorted(unused)}; tokens: {pieces}")
        return [(p, low.get(p.strip(), default_prob)) for p in pieces]

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int,
        stop: Sequence[str] = (),
        stop_when: StopWhen | None = None,
        logit_bias: Mapping[str, float] | None = None,
    ) -> Completion:
        """Play the first rule matching ``prompt`` (see the class docstring for the rules)."""
        start = time.perf_counter()
        self.calls.append(prompt)
        response = _biased(self._find(prompt), logit_bias or {}, max_tokens)
        tokens: list[TokenLogprob] = []
        text = ""
        finish: FinishReason = "stop"
        for i, (piece, prob) in enumerate(response):
            if i >= max_tokens:
                finish = "length"
                break
            tokens, text, ended = append_piece(tokens, text, TokenLogprob(piece, math.log(prob)), stop, stop_when)
            if ended is not None:
                finish = ended
                break
        completion = Completion(
            text=text,
            tokens=tuple(tokens) if self.supports_logprobs else (),
            finish_reason=finish,
            prompt_tokens=self.count_tokens(prompt),
            prompt_tokens_evaluated=self.count_tokens(prompt),
            generated_tokens=len(tokens),
            seconds=time.perf_counter() - start,
        )
        self.requests.append(ScriptedCall(prompt, max_tokens, tuple(stop), logit_bias, completion))
        return completion

    def score(self, prompt: str, continuation: str) -> Completion:
        """Score ``continuation`` after ``prompt`` against the first matching rule.

        Each :meth:`split` piece of ``continuation`` gets the probability the rule's response
        gives the same piece (compared without surrounding spaces), or ``unknown_prob`` if the
        response never says it: a model shown other text finds these words unlikely. A prompt no
        rule matches scores every piece at ``unknown_prob``. Calls are recorded in :attr:`scored`.
        """
        self.scored.append((prompt, continuation))
        known: dict[str, float] = {}
        for match, response in self.rules:
            if match in prompt if isinstance(match, str) else match(prompt):
                known = {piece.strip(): prob for piece, prob in reversed(response)}
                if not response:
                    known[""] = 1.0  # a model that says nothing here ends its text: it is sure of the end
                break
        tokens = tuple(
            TokenLogprob(p, math.log(known.get(p.strip(), self.unknown_prob))) for p in self.split(continuation)
        )
        n = self.count_tokens(prompt)
        return Completion(continuation, tokens, "stop", n + len(tokens), n + len(tokens))

    def count_tokens(self, text: str) -> int:
        """Number of :meth:`split` pieces in ``text``."""
        return len(self.split(text))

    def _find(self, prompt: str) -> Response:
        for match, response in self.rules:
            hit = match in prompt if isinstance(match, str) else match(prompt)
            if hit:
                return response
        tail = prompt[-300:]
        raise ScriptError(
            f"{self.name}: no rule matches call #{len(self.calls)} ({len(self.rules)} rules); "
            f"prompt ends with:\n...{tail}"
        )


FORCE_BIAS = 100.0
"""A logit bias this large (or its negative) forces (or bans) a piece, as OpenAI documents ±100."""


def _biased(response: Response, logit_bias: Mapping[str, float], max_tokens: int) -> Response:
    """``response`` as the ±:data:`FORCE_BIAS` entries of ``logit_bias`` change it."""
    forced = [key for key, bias in logit_bias.items() if bias >= FORCE_BIAS and key]
    if forced:
        return [(forced[0], 1.0)] * max(max_tokens, 0)
    banned = tuple(key for key, bias in logit_bias.items() if bias <= -FORCE_BIAS and key)
    if not banned:
        return response
    return [(piece, p) for piece, p in response if not (piece.startswith(banned) or piece.lstrip().startswith(banned))]
