"""The method table: built-ins and user policies register the same way, and names are checked."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from flare.config import Settings
from flare.engine.events import Searching
from flare.engine.loop import Flare
from flare.engine.methods import (
    check_method,
    policy_for,
    prompt_style,
    register_policy,
    registered_methods,
    unregister_policy,
)
from flare.engine.step import Commit, Piece, StepContext, StepGen
from flare.errors import ConfigError
from flare.testing.memory import MemoryRetriever
from flare.testing.scripted import ScriptedLM
from flare.trace.tracers import MemoryTracer
from tests.engine.support import BARE, DOCS, has_docs


class AskTwice:
    """Retrieves with the question before every sentence; stops after two sentences."""

    name = "ask_twice"
    needs_logprobs = False

    def __init__(self, settings: Settings) -> None:
        self.k = settings.k

    def step(self, ctx: StepContext) -> StepGen:
        if ctx.index == 2:
            return "end"  # a policy may end the answer
        yield Searching(ctx.index, 1)
        docs = [h.passage for h in ctx.search([ctx.run.question])]
        ctx.record.kind, ctx.record.decision = "ask_twice", "retrieve"
        return Commit(ctx.generate(docs, "generate"), docs, retrieved=True, grounded=bool(docs))


@pytest.fixture
def ask_twice() -> Iterator[str]:
    register_policy("ask_twice", AskTwice)
    yield "ask_twice"
    unregister_policy("ask_twice")


def test_the_builtin_methods_are_in_the_table_with_their_prompt_styles() -> None:
    assert {"flare", "single", "none", "previous_window", "previous_sentence", "decompose", "instruct"} <= set(
        registered_methods()
    )
    assert prompt_style("flare") == "answer"
    assert prompt_style("decompose") == "decompose"
    assert prompt_style("instruct") == "instruct"
    assert check_method("previous-window") == "previous_window"  # '-' and '_' are one
    assert type(policy_for(Settings(method="single"))).__name__ == "SingleRetrieval"


def test_a_registered_policy_runs_through_the_engine(ask_twice: str) -> None:
    lm = ScriptedLM(
        [
            (lambda p: has_docs(p) and p.endswith("founded it."), ScriptedLM.sentence(" He was from Milan. More")),
            (lambda p: has_docs(p), ScriptedLM.sentence(" Gianni Versace founded it. More")),
        ]
    )
    tracer = MemoryTracer()
    retriever = MemoryRetriever(DOCS)
    engine = Flare(lm, retriever, Settings(method=ask_twice, k=2), template=BARE, tracer=tracer)
    answer = engine.answer("Who founded Versace?")
    assert answer.stop_reason == "end"
    assert [s.text for s in answer.sentences] == ["Gianni Versace founded it.", "He was from Milan."]
    assert answer.retrievals == 2 and all(s.retrieved for s in answer.sentences)
    assert [s.kind for s in tracer.traces[0].steps] == ["ask_twice", "ask_twice", "draft"]  # the stop step too
    assert tracer.traces[0].method == "ask_twice"
    assert [q for q, _ in retriever.queries] == ["Who founded Versace?"] * 2


def test_an_unknown_method_fails_when_the_engine_is_built_or_asked(ask_twice: str) -> None:
    lm = ScriptedLM([])
    with pytest.raises(ConfigError, match=r"method 'magic' is not available.*ask_twice"):
        Flare(lm, MemoryRetriever(DOCS), Settings(method="magic"))
    engine = Flare(lm, MemoryRetriever(DOCS))
    with pytest.raises(ConfigError, match="magic"):
        engine.answer("Who founded Versace?", settings=Settings(method="magic"))
    assert lm.calls == []  # nothing ran


def test_registration_errors_say_what_to_do(ask_twice: str) -> None:
    with pytest.raises(ConfigError, match=r"already registered.*replace=True"):
        register_policy("ask_twice", AskTwice)
    register_policy("ask_twice", AskTwice, replace=True)
    for bad in ("", "Mine", "my-method", "1st", "x" * 41):
        with pytest.raises(ConfigError, match="invalid method name"):
            register_policy(bad, AskTwice)
    with pytest.raises(ConfigError, match="prompt style"):
        register_policy("styled", AskTwice, style="chatty")  # type: ignore[arg-type]
    assert "styled" not in registered_methods()


def test_commit_flags_are_keyword_only() -> None:
    piece = Piece("Gianni Versace founded it.", (), False)
    with pytest.raises(TypeError):
        Commit(piece, (), True, False)  # type: ignore[call-arg]
    c = Commit(piece, retrieved=True, grounded=False)
    assert (c.docs, c.retrieved, c.grounded, c.support) == ((), True, False, None)
