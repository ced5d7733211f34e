"""The method table: each method name (``Settings.method``) and the policy that implements it.

Built-in methods register here the same way as a user's: a name, a factory that makes a fresh
:class:`~flare.engine.step.Policy` for each answer, and the exemplar style its prompt needs
(``answer``; ``decompose`` for self-ask ``Follow up:`` questions; ``instruct`` for
``[Search(query)]`` tags). ``Settings`` accepts any method name; the engine, the CLI, the server
and ``flare eval`` check it against this table before any work starts.

Example::

    from flare.engine.methods import register_policy
    from flare.engine.step import Commit, StepContext, StepGen

    class Never:
        name = "never"
        needs_logprobs = False

        def step(self, ctx: StepContext) -> StepGen:
            ctx.record.kind = ctx.record.decision = "generate"
            return Commit(ctx.generate([], "generate"))
            yield  # a generator, like every step

    register_policy("never", lambda settings: Never())
    Flare(lm, retriever, Settings(method="never"))
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from flare.config import Settings
from flare.engine import baselines, policies
from flare.engine.prompt_styles import PROMPT_STYLES, PromptStyle
from flare.engine.step import Policy
from flare.errors import ConfigError

__all__ = [
    "MethodEntry", "PolicyFactory", "PromptStyle", "check_method", "method_entry", "policy_for", "prompt_style",
    "register_policy", "registered_methods", "unregister_policy",
]  # fmt: skip
PolicyFactory = Callable[[Settings], Policy]
"""Called with the answer's settings; returns a fresh policy for that one answer."""

_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


@dataclass(frozen=True, slots=True)
class MethodEntry:
    """One row of the table: a method's name, its policy factory and its prompt style."""

    name: str
    factory: PolicyFactory
    style: PromptStyle = "answer"


_TABLE: dict[str, MethodEntry] = {}


def register_policy(
    name: str, factory: PolicyFactory, *, style: PromptStyle = "answer", replace: bool = False
) -> None:
    """Make ``Settings(method=name)`` run the policies ``factory`` makes.

    ``style`` picks the exemplars of the default prompt: plain answers, or answers annotated
    with ``Follow up:`` questions or ``[Search(query)]`` tags for policies that read them.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(
            f"invalid method name {name!r}",
            "use lower-case letters, digits and '_', starting with a letter, e.g. 'my_method'",
        )
    if style not in PROMPT_STYLES:
        raise ConfigError(f"invalid prompt style {style!r}", f"choose one of: {', '.join(PROMPT_STYLES)}")
    if name in _TABLE and not replace:
        raise ConfigError(f"method {name!r} is already registered", "pass replace=True to replace it")
    _TABLE[name] = MethodEntry(name, factory, style)


def unregister_policy(name: str) -> None:
    """Remove a method (tests and plugins that clean up after themselves)."""
    _TABLE.pop(name, None)


def registered_methods() -> list[str]:
    """Every method name, sorted (for help texts, error hints and choices)."""
    return sorted(_TABLE)


def method_entry(name: str) -> MethodEntry:
    """The table row for ``name`` (``-`` and ``_`` are interchangeable); unknown names raise."""
    key = name.strip().lower().replace("-", "_") if isinstance(name, str) else name
    entry = _TABLE.get(key)
    if entry is None:
        raise ConfigError(f"method {name!r} is not available", f"choose one of: {', '.join(registered_methods())}")
    return entry


def check_method(name: str) -> str:
    """The canonical name of a registered method; unknown names raise :class:`ConfigError`."""
    return method_entry(name).name


def policy_for(settings: Settings) -> Policy:
    """A fresh policy for ``settings.method``."""
    return method_entry(settings.method).factory(settings)


def prompt_style(method: str) -> PromptStyle:
    """The exemplar style ``method`` needs in its prompt."""
    return method_entry(method).style


register_policy("flare", lambda s: policies.FlareDirect(needs_logprobs=s.trigger != "support"))
register_policy("single", lambda s: policies.SingleRetrieval())
register_policy("none", lambda s: policies.NoRetrieval())
register_policy("previous_window", lambda s: baselines.PreviousWindow())
register_policy("previous_sentence", lambda s: baselines.PreviousSentence())
register_policy("decompose", lambda s: baselines.Decompose(), style="decompose")
register_policy("instruct", lambda s: baselines.Instruct(), style="instruct")
