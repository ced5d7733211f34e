"""Settings for one FLARE run: one frozen record shared by the Python API, the CLI and the server.

Defaults follow the paper's multi-hop setting (Table 9: θ=0.8, β=0.4, implicit queries, no
"combine single- and multi-time retrieval"); the paper uses θ=0.4 for StrategyQA and explicit
queries with combined retrieval for ASQA. Small local models put a sentence's first word and
function words well below 0.8, so calibrate θ per model (``flare eval`` sweeps it).

Low token probability is a *trigger signal*, not a verdict on truth: a confident sentence can be
wrong and an unsure one right. It only decides when to look things up.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Literal

from flare.errors import ConfigError

Trigger = Literal["min", "mean", "dynamic", "content"]
QueryMode = Literal["implicit", "explicit"]
OnMissing = Literal["stop", "keep"]

TRIGGERS: tuple[str, ...] = ("min", "mean", "dynamic", "content")
QUERY_MODES: tuple[str, ...] = ("implicit", "explicit")
ON_MISSING: tuple[str, ...] = ("stop", "keep")


@dataclass(frozen=True, slots=True)
class Settings:
    """Every knob of the loop. Build with keywords; invalid values raise :class:`ConfigError`.

    Example::

        >>> s = Settings(theta=0.5, beta=0.3, max_retrievals=4)
        >>> s.with_overrides(k=5).k
        5
    """

    # A name in the method table (flare.engine.methods), checked there: a user may register more.
    method: str = "flare"
    # When to retrieve (M2): "min" = any token p < theta; "mean" = mean(p) < theta, i.e.
    # mean(1-p) > 1-theta; "dynamic" = theta for fact-dense sentences (numbers, dates, names)
    # and theta_prose for connective prose; "content" = the min rule over content words only.
    theta: float = 0.8
    trigger: Trigger = "min"
    theta_prose: float = 0.4
    # What to ask (M3/M4): tokens with p < beta are masked (implicit) or become question targets.
    beta: float = 0.4
    query: QueryMode = "implicit"
    query_with_question: bool = False
    k: int = 3
    keep_first_docs: bool = False  # M5 "combine single- and multi-time retrieval"
    conditional_commit: bool = False  # M10 option: keep the draft if new docs look irrelevant
    min_relevance: float = 0.0
    on_missing: OnMissing = "stop"  # C3: nothing found for a gap -> end the answer, or keep draft
    # Budgets (C2). Each cap exists so a single question can never run away with the machine.
    max_retrievals: int = 8
    max_retries_per_gap: int = 1
    max_output_tokens: int = 256
    max_sentences: int = 12
    max_seconds: float = 120.0
    max_sentence_tokens: int = 64  # the paper's look-ahead length; we also stop at sentence end
    window_tokens: int = 16  # the previous-window baseline retrieves every l=16 tokens (paper)
    language: Literal["auto", "en", "zh"] = "auto"

    def __post_init__(self) -> None:
        if not isinstance(self.method, str) or not self.method.strip():
            raise ConfigError("method must be a method name", "e.g. flare, single, none, instruct")
        _check_choice("trigger", self.trigger, TRIGGERS)
        _check_choice("query", self.query, QUERY_MODES)
        _check_choice("on_missing", self.on_missing, ON_MISSING)
        _check_choice("language", self.language, ("auto", "en", "zh"))
        for name in ("theta", "theta_prose", "beta"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"{name}={value} is out of range", f"{name} is a probability in [0, 1]")
        for name in ("k", "max_sentences", "max_output_tokens", "max_sentence_tokens", "window_tokens"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1", f"set {name} to a positive integer")
        for name in ("max_retrievals", "max_retries_per_gap"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must not be negative", "use 0 to disable, or a positive integer")
        if self.max_seconds <= 0:
            raise ConfigError("max_seconds must be positive", "give a time budget in seconds, e.g. 60")

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with some fields changed; unknown names raise :class:`ConfigError`."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ConfigError(f"unknown setting(s): {', '.join(unknown)}", f"known: {', '.join(sorted(known))}")
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{name}={value!r} is not a valid choice", f"choose one of: {', '.join(allowed)}")
