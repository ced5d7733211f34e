"""The end of the answer judged like a drafted token: an unsure end retrieves, a sure one ends.

The judge belongs to the paper's loop (``trigger=min``), which drafts without documents; the
default ``support`` trigger drafts with the question's documents and keeps the end as drafted.
"""

from __future__ import annotations

from flare.config import Settings
from flare.engine.ending import END_TOKEN
from flare.engine.loop import Flare
from flare.testing.memory import MemoryRetriever
from flare.testing.scripted import ScriptedLM
from flare.trace.tracers import MemoryTracer
from tests.engine.support import BARE, DOCS, has_docs

FIRST = " The founder of Versace was Gianni Versace."
MORE = " He was shot in Miami Beach on 15 July 1997."
QUESTION = "Who founded Versace, and how did he die?"


def answered(prompt: str) -> str:
    return prompt.rsplit("Answer:", 1)[-1].strip()


def script(end_prob: float) -> ScriptedLM:
    """First sentence from the documents; without documents the model ends the line with ``end_prob``."""
    return ScriptedLM([
        (lambda p: answered(p).endswith("1997."), []),
        (lambda p: has_docs(p) and not answered(p), ScriptedLM.sentence(FIRST + " And")),  # goes on
        (has_docs, ScriptedLM.sentence(MORE)),
        (lambda p: True, [("\n", end_prob)]),
    ])


def run(lm: ScriptedLM, **settings: object) -> tuple[list[str], MemoryTracer, MemoryRetriever]:
    """The paper's loop (trigger=min: drafts without documents), unverified, so only the end judge scores."""
    tracer, retriever = MemoryTracer(), MemoryRetriever(DOCS)
    chosen = Settings(trigger="min", verify="off").with_overrides(**settings)
    flare = Flare(lm, retriever, chosen, template=BARE, tracer=tracer)
    return [s.text for s in flare.answer(QUESTION).sentences], tracer, retriever


def test_an_unsure_end_retrieves_with_the_question_and_the_answer_goes_on() -> None:
    sentences, tracer, retriever = run(script(end_prob=0.3))
    assert sentences == [FIRST.strip(), MORE.strip()]
    step = tracer.traces[0].steps[1]
    assert step.draft == "" and step.decision == "retrieve" and step.queries == [QUESTION]
    assert step.low_tokens == [(END_TOKEN, 0.3)] and step.threshold == 0.8
    assert len(retriever.queries) == 2


def test_a_sure_end_ends_the_answer_without_a_search() -> None:
    sentences, tracer, retriever = run(script(end_prob=0.9))
    assert sentences == [FIRST.strip()] and len(retriever.queries) == 1
    assert tracer.traces[0].steps[1].decision == "end"


def test_judge_end_off_and_theta_zero_keep_the_end_without_scoring() -> None:
    for settings in ({"judge_end": False}, {"theta": 0.0}):
        lm = script(end_prob=0.3)
        sentences, _, _ = run(lm, **settings)
        assert sentences == [FIRST.strip()] and lm.scored == []


def test_the_support_trigger_keeps_the_end_as_drafted() -> None:
    lm = script(end_prob=0.3)
    run(lm, trigger="support")
    assert lm.calls and all(cont != "\n" for _, cont in lm.scored)  # the end of the line is never scored


def test_theta_one_looks_up_even_a_sure_end() -> None:
    sentences, _, _ = run(script(end_prob=0.99), theta=1.0)
    assert sentences == [FIRST.strip(), MORE.strip()]
