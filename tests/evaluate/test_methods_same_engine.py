"""Every method runs on the same loop, LM, prompts and k: only when and what it retrieves differ (M8, M9)."""

from __future__ import annotations

from typing import Any

import pytest

from flare.config import Settings
from flare.engine.loop import Flare
from flare.evaluate.methods import parse_method
from flare.evaluate.prompts import style_for, template_for
from flare.testing.memory import MemoryRetriever
from flare.trace.schema import TraceRecord
from flare.trace.tracers import MemoryTracer
from tests.evaluate.support import ANSWER, DOCS, QUESTION, SELF_ASK, ContinuationLM

BASE = ("none", "single", "flare", "flare-every", "previous-sentence", "previous-window")
# Two searches per gap: "So the answer is Emma Jane Whelan" asks again for what the sentence before it
# searched (the same gap, by its words); θ=1 must still search for every sentence here.
SETTINGS = Settings(k=2, theta=0.8, beta=0.4, window_tokens=6, max_retries_per_gap=2, trigger="min", verify="off")


def run(spec_text: str) -> tuple[str, TraceRecord, ContinuationLM, str]:
    spec = parse_method(spec_text)
    settings = spec.settings(SETTINGS)
    template = template_for("2wikimultihopqa", layout="plain", style=style_for(spec.method))
    lm, tracer = ContinuationLM(), MemoryTracer()
    answer = Flare(lm, MemoryRetriever(DOCS), settings, template=template, tracer=tracer).answer(QUESTION)
    return answer.text, tracer.traces[0], lm, template.header


@pytest.fixture(scope="module")
def runs() -> dict[str, tuple[str, TraceRecord, ContinuationLM, str]]:
    return {m: run(m) for m in (*BASE, "decompose", "instruct")}


def queries(trace: TraceRecord) -> list[list[str]]:
    return [s.queries for s in trace.steps]


def test_same_answer_prompts_and_k_for_every_base_method(runs: dict[str, Any]) -> None:
    header = runs["none"][3]
    for method in BASE:
        text, trace, lm, hdr = runs[method]
        assert text == ANSWER, method  # generation is the same: the answer does not depend on the method
        assert hdr == header, method
        assert all(p.startswith(header) for p in lm.calls), method  # same instruction and exemplars
        assert trace.settings["k"] == 2
        for step in trace.steps:
            assert len(step.retrieved) <= 2, method
        for prompt in lm.calls:
            live = prompt[len(header):]
            assert live.count("\n[") <= 2 and ("Search results:\n[1] " in live) == ("[1]" in live)


def test_when_and_what_each_method_retrieves(runs: dict[str, Any]) -> None:
    assert runs["none"][1].retrievals == 0
    single = queries(runs["single"][1])
    assert single[0] == [QUESTION] and not any(single[1:])
    # Previous sentence: every sentence after the first searches with the sentence before it.
    prev = runs["previous-sentence"][1]
    assert prev.steps[0].queries == [QUESTION]
    for before, step in zip(prev.steps, prev.steps[1:], strict=False):
        assert step.queries == [before.sentence]
    # Forward-looking every sentence (θ=1): every later sentence searches with its own masked draft.
    every = runs["flare-every"][1]
    assert all(s.queries and s.decision == "retrieve" for s in every.steps)
    # "mother" (p=0.2 < β) stays: the question says it, so it is known, not guessed; "His" points
    # at the person the answer named, whose name leads the query.
    assert every.steps[1].queries == ["Alfred Hitchcock His mother was Emma Jane Whelan"]
    # FLARE θ=0.8: only the sentences with an unsure word retrieve.
    flare = runs["flare"][1]
    assert [bool(s.queries) for s in flare.steps] == [True, True, False]
    # Previous window: 6-token windows, each window's search is the window before it.
    win = runs["previous-window"][1]
    assert len(win.steps) > 3 and win.steps[0].queries == [QUESTION]
    for before, step in zip(win.steps, win.steps[1:], strict=False):
        assert step.queries == [before.sentence]
        assert len(step.draft_tokens) == 0 and step.output_tokens <= 6


def test_decompose_searches_each_follow_up_question(runs: dict[str, Any]) -> None:
    text, trace, _, _ = runs["decompose"]
    assert text == SELF_ASK
    searched = [q for s in trace.steps for q in s.queries]
    assert searched == [QUESTION, "Who directed Rebecca?", "Who was the mother of Alfred Hitchcock?"]
    follow_ups = [i for i, s in enumerate(trace.steps) if s.sentence.startswith("Follow up:")]
    for i in follow_ups:  # the intermediate answer after a follow-up is written from its documents
        assert trace.steps[i + 1].queries and trace.steps[i + 1].sentence.startswith("Intermediate answer:")


def test_instruct_searches_where_the_model_asks_and_drops_the_tags(runs: dict[str, Any]) -> None:
    text, trace, lm, _ = runs["instruct"]
    assert text == ANSWER  # same answer as every other method: the tags are gone
    assert [s.queries for s in trace.steps][:2] == [[QUESTION, "Who directed Rebecca?"], ["Hitchcock mother"]]
    biases = [r.logit_bias for r in lm.requests]
    assert biases[0] == {"[": 2.0}
    after_search = [b for b in biases if b and b["["] < 0]
    assert len(after_search) == 2  # "[" forbidden for a few tokens after each search
    assert all(r.max_tokens <= 4 for r in lm.requests if r.logit_bias and r.logit_bias["["] < 0)


def test_instruct_without_logit_bias_support_still_runs() -> None:
    template = template_for("2wikimultihopqa", layout="plain", style="instruct")
    lm = ContinuationLM()
    lm.supports_logit_bias = False
    answer = Flare(lm, MemoryRetriever(DOCS), SETTINGS.with_overrides(method="instruct"), template=template).answer(
        QUESTION
    )
    assert answer.text.endswith("So the answer is Emma Jane Whelan.")
    assert all(r.logit_bias is None for r in lm.requests)


def test_every_policy_is_registered() -> None:
    from flare.engine.methods import registered_methods

    assert {"previous_window", "previous_sentence", "decompose", "instruct"} <= set(registered_methods())
