"""Verified answers in the loop (C5, C6): flag, drop, retry, leaks, the support trigger, omissions."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from flare.config import Settings
from flare.engine.events import Finished, Rewriting, Searching, SentenceAccepted
from flare.engine.loop import Flare
from flare.engine.policies import excerpt, names_in, repeats_answer, restates
from flare.engine.prompts import FOLLOW_UP, PromptTemplate
from flare.engine.step import RunState, titled
from flare.retrieve.filters import NO_FILTERS, Filters
from flare.testing.memory import MemoryRetriever
from flare.testing.scripted import ScriptedLM
from flare.trace.schema import TraceRecord
from flare.trace.tracers import MemoryTracer
from flare.types import Hit, Passage, Sentence
from tests.engine.support import BARE, DOCS, FANS, SONG, has_docs, says, song_lm, tail

QUESTION = "Why did the founder of Versace die?"
FIRST = " The founder of Versace was Gianni Versace."
DRAFT = " He was shot in Rome in 1990."
BAD = " He was shot in Miami Beach in 1999."  # the documents say 1997
GOOD = " He was shot in Miami Beach in 1997."
LOW = {"Rome": 0.1, "1990": 0.2}
# One more passage, which the question's search (k=2) does not reach and a draft's search does: a
# rewrite from the same documents as the draft would write the same sentence, so it is skipped.
REPORT = Passage("v3", "A police report says his gardener found Versace shot at his Miami Beach home in 1997.",
                 "Police report", {"acl": ["public"], "year": 1997})  # fmt: skip


def script(*regens: str, draft: str = DRAFT, low: dict[str, float] | None = None) -> ScriptedLM:
    """FIRST from the question's documents; an unsure draft; then ``regens`` in turn from documents."""
    lm = ScriptedLM([(lambda p: tail(p).rstrip().endswith(("1997.", "1999.", "day.")), [])])
    lm.add(lambda p: has_docs(p) and not tail(p).strip(), says(FIRST))
    prompts: list[str] = []

    def nth(i: int) -> Callable[[str], bool]:
        def match(p: str) -> bool:
            if not (has_docs(p) and tail(p).strip() == FIRST.strip()):
                return False
            if p not in prompts:
                prompts.append(p)
            return prompts.index(p) == i or (i == len(regens) - 1 and prompts.index(p) > i)

        return match

    for i, text in enumerate(regens):
        lm.add(nth(i), says(text))
    lm.add(lambda p: not has_docs(p), says(draft, low=LOW if low is None else low))
    return lm


def run(lm: ScriptedLM, template: PromptTemplate = BARE, retriever: MemoryRetriever | None = None,
        **settings: object) -> tuple[Flare, MemoryTracer]:  # fmt: skip
    tracer = MemoryTracer()
    settings = {"trigger": "min", "verify": "off", **settings}  # the paper's trigger unless a test says
    flare = Flare(lm, retriever or MemoryRetriever(DOCS), Settings(**settings),  # type: ignore[arg-type]
                  template=template, tracer=tracer)  # fmt: skip
    return flare, tracer


def test_flag_marks_an_unsupported_sentence_and_cites_only_what_backs_it() -> None:
    lm = script(BAD)
    flare, tracer = run(lm, verify="flag", evidence_lift=True)
    events = list(flare.stream(QUESTION))
    answer = events[-1].answer  # type: ignore[union-attr]
    first, second = answer.sentences
    assert first.support == "supported" and not first.flagged
    assert second.text == BAD.strip() and second.support == "partial" and second.flagged
    assert second.unsupported == ("1999",)
    assert second.citations == ()  # a sentence its passages do not back cites none of them
    assert first.citations == (1,) and [c.passage_id for c in answer.sources] == ["v1"]
    rendered = answer.render()
    assert "1999[?]." in rendered and '"1999" not found in the passages it was written from' in rendered
    as_json = answer.to_dict()["sentences"][1]
    assert as_json["flagged"] is True and as_json["unsupported"] == ["1999"] and as_json["support"] == "partial"
    streamed = [e.sentence for e in events if isinstance(e, SentenceAccepted)]
    assert streamed[1].flagged and streamed[1].unsupported == ("1999",)
    step = tracer.traces[0].steps[1]
    assert step.support == "partial" and step.verify == "flag" and step.unsupported == ["1999"]
    assert "v2" in step.evidence and ("Miami", "name", True, step.claims[2][3]) in step.claims  # v2 backs the rest
    assert step.lift is not None and step.lift > 0  # the passages made Miami Beach far likelier
    # The evidence lift scored the sentence after the very prompt its draft was written from.
    drafts = [c for c in lm.calls if not has_docs(c) and tail(c).strip() == FIRST.strip()]
    assert any(prompt == drafts[0] and cont.strip() == BAD.strip() for prompt, cont in lm.scored)


def test_verify_off_keeps_the_old_behaviour_and_never_scores() -> None:
    lm = script(BAD)
    flare, _ = run(lm, judge_end=False)  # the end-of-answer judge would score the end of the line
    answer = flare.answer(QUESTION)
    assert [s.support for s in answer.sentences] == ["unchecked", "unchecked"]
    assert not any(s.flagged for s in answer.sentences) and "[?]" not in answer.render()
    assert lm.scored == []


def test_evidence_lift_is_off_by_default() -> None:
    lm = script(BAD)
    flare, tracer = run(lm, verify="flag", judge_end=False)  # the end judge would score the line end
    flare.answer(QUESTION)
    assert lm.scored == [] and tracer.traces[0].steps[1].lift is None


def test_drop_removes_the_sentence_before_any_event_and_the_model_goes_on() -> None:
    lm = script(BAD)
    flare, tracer = run(lm, verify="drop")
    events = list(flare.stream(QUESTION))
    answer = events[-1].answer  # type: ignore[union-attr]
    assert [s.text for s in answer.sentences] == [FIRST.strip()]
    assert all("1999" not in repr(e) for e in events if not isinstance(e, Finished))
    assert "1999" not in answer.render() and "1999" not in answer.text
    step = tracer.traces[0].steps[1]
    assert step.rejected == [BAD.strip()] and step.verify == "drop" and step.sentence == ""
    # The rejected sentence stays in the model's context, so it moves on instead of repeating it.
    assert any(not has_docs(c) and tail(c).rstrip().endswith("1999.") for c in lm.calls)
    assert answer.stop_reason == "end"


def test_retry_searches_with_the_question_and_the_unsupported_words_then_rewrites() -> None:
    lm = script(BAD, GOOD)
    flare, tracer = run(lm, verify="retry")
    events = list(flare.stream(QUESTION))
    answer = events[-1].answer  # type: ignore[union-attr]
    assert [s.text for s in answer.sentences] == [FIRST.strip(), GOOD.strip()]
    assert answer.sentences[1].support == "supported" and not answer.sentences[1].flagged
    step = tracer.traces[0].steps[1]
    assert step.verify == "retry>pass" and step.rejected == [BAD.strip()]
    assert step.queries[-1] == f"{QUESTION} 1999"
    kinds = [type(e) for e in events]
    assert kinds.count(Searching) == 3 and kinds.count(Rewriting) == 2  # question, draft, retry
    assert all("1999" not in repr(e) for e in events if not isinstance(e, Finished))


@pytest.mark.parametrize(("then", "shown"), [("flag", True), ("drop", False)])
def test_retry_that_still_fails_flags_or_drops(then: str, shown: bool) -> None:
    flare, tracer = run(script(BAD), verify="retry", retry_then=then)
    answer = flare.answer(QUESTION)
    assert (BAD.strip() in answer.text) is shown
    assert tracer.traces[0].steps[1].verify == f"retry>{then}"


def test_retry_respects_the_retrieval_budget() -> None:
    flare, tracer = run(script(BAD, GOOD), verify="retry", max_retrievals=2)
    answer = flare.answer(QUESTION)
    assert answer.retrievals == 2 and answer.sentences[1].flagged  # no search left to retry with
    assert tracer.traces[0].steps[1].verify == "flag"


def test_a_name_only_the_exemplars_contain_is_never_shown() -> None:
    header = "Question: Which river drains Lake Vorsk?\nAnswer: The Kessa drains it.\n\n"
    template = PromptTemplate("plain", header, "", "\nAnswer:", ("\n",))
    leak = " He was shot by Kessa in Miami Beach in 1997."
    flare, tracer = run(script(leak), template=template, verify="flag")
    answer = flare.answer(QUESTION)
    assert "Kessa" not in answer.render()
    step = tracer.traces[0].steps[1]
    assert step.leaked == ["Kessa"] and step.verify == "drop"


def test_support_trigger_accepts_a_draft_its_documents_back_without_searching() -> None:
    lm = ScriptedLM([(lambda p: tail(p).rstrip().endswith("1997."), [])])
    lm.add(lambda p: has_docs(p) and not tail(p).strip(), says(FIRST))
    lm.add(lambda p: has_docs(p), says(GOOD, low={"Miami": 0.05}))  # unsure, but backed
    # follow_names off: these tests count the searches for the drafts themselves.
    flare, tracer = run(lm, trigger="support", follow_names=False)
    answer = flare.answer(QUESTION)
    assert answer.retrievals == 1 and answer.sentences[1].text == GOOD.strip()
    step = tracer.traces[0].steps[1]
    assert step.decision == "accept" and step.support == "supported" and step.queries == []
    assert has_docs(lm.calls[1])  # the draft was written with the question's documents


PARAPHRASE = " He was killed near his Miami Beach home in 1997."  # 70% of its claims' weight in v2


def paraphrase_lm() -> ScriptedLM:
    """FIRST, then PARAPHRASE drafted from the question's documents (the support trigger's draft)."""
    lm = ScriptedLM([(lambda p: tail(p).rstrip().endswith("1997."), [])])
    lm.add(lambda p: has_docs(p) and not tail(p).strip(), says(FIRST))
    lm.add(lambda p: has_docs(p), says(PARAPHRASE))
    return lm


@pytest.mark.parametrize(("coverage", "searched"), [(0.8, True), (0.6, False)])
def test_support_coverage_sets_how_many_words_a_backed_draft_may_paraphrase(coverage: float, searched: bool) -> None:
    # Every name and number is in v2; "killed", "near" and "home" are not (it says "shot dead
    # outside his ... mansion"): 70% of the claims' weight is backed.
    flare, tracer = run(paraphrase_lm(), trigger="support", follow_names=False, verify="flag",
                        support_coverage=coverage, verify_coverage=coverage)  # fmt: skip
    answer = flare.answer(QUESTION)
    step = tracer.traces[0].steps[1]
    assert step.draft_support == ("partial" if searched else "")
    assert (step.decision == "accept") is not searched and (answer.retrievals > 1) is searched
    if not searched:
        assert answer.sentences[1].text == PARAPHRASE.strip() and not answer.sentences[1].flagged
    assert step.coverage == 0.7 and step.claims[-1] == ("1997", "number", True, None)
    lm = ScriptedLM([(lambda p: tail(p).rstrip().endswith("1990."), [])])
    lm.add(lambda p: has_docs(p) and not tail(p).strip(), says(FIRST))
    lm.add(lambda p: True, says(" He was shot dead outside his Miami Beach mansion in 1990."))
    flare, _ = run(lm, trigger="support", follow_names=False, verify="flag", support_coverage=coverage)
    assert flare.answer(QUESTION).sentences[1].flagged  # a wrong number fails at any coverage


@pytest.mark.parametrize(("verify_coverage", "flagged"), [(0.8, True), (0.6, False), (1.0, True)])
def test_verify_coverage_sets_what_a_shown_sentence_is_held_to(verify_coverage: float, flagged: bool) -> None:
    # Every name and number of the rewrite is in v2; "killed", "near" and "home" are not.
    flare, tracer = run(script(PARAPHRASE), verify="flag", verify_coverage=verify_coverage)
    answer = flare.answer(QUESTION)
    step = tracer.traces[0].steps[1]
    assert step.decision == "retrieve" and answer.sentences[1].text == PARAPHRASE.strip()
    assert step.coverage == 0.7 and step.claims[-1] == ("1997", "number", True, None)
    assert answer.sentences[1].flagged is flagged and step.verify == ("flag" if flagged else "pass")


def test_a_laxer_verify_coverage_leaves_the_support_trigger_its_own() -> None:
    flare, tracer = run(paraphrase_lm(), trigger="support", follow_names=False, verify="flag", verify_coverage=0.6)
    answer = flare.answer(QUESTION)
    step = tracer.traces[0].steps[1]
    assert step.draft_support == "partial" and step.decision != "accept"  # searched for at 0.8
    assert answer.retrievals > 1


def test_a_stricter_verify_coverage_checks_a_kept_draft_again() -> None:
    flare, tracer = run(paraphrase_lm(), trigger="support", follow_names=False, verify="flag", support_coverage=0.6,
                        verify_coverage=0.9)  # fmt: skip
    answer = flare.answer(QUESTION)
    step = tracer.traces[0].steps[1]
    assert step.decision == "accept" and answer.retrievals == 1  # kept unsearched at 0.6
    assert answer.sentences[1].flagged and step.verify == "flag"  # but shown marked at 0.9


def test_support_trigger_searches_without_the_unbacked_words() -> None:
    # The draft (written with the question's documents) says 1999; they say 1997.
    flare, tracer = run(script(BAD, GOOD), retriever=MemoryRetriever([*DOCS, REPORT]), trigger="support",
                        follow_names=False, k=2)  # fmt: skip
    answer = flare.answer(QUESTION)
    step = tracer.traces[0].steps[1]
    assert step.draft == BAD.strip() and step.decision == "retrieve" and step.draft_unsupported == ["1999"]
    assert "1999" not in step.queries[0] and "Miami" in step.queries[0]
    assert answer.retrievals == 2 and answer.sentences[1].text == GOOD.strip()
    # verify=off: the rewritten sentence is not checked, and the trace does not say it failed.
    assert step.draft_support == "partial" and step.support == "unchecked" and step.unsupported == []
    assert not answer.sentences[1].flagged


def test_support_trigger_with_verify_checks_the_rewritten_sentence_not_the_draft() -> None:
    more = MemoryRetriever([*DOCS, REPORT])
    flare, tracer = run(script(BAD, GOOD), retriever=more, trigger="support", k=2, verify="flag")
    answer = flare.answer(QUESTION)
    step = tracer.traces[0].steps[1]
    assert step.draft_support == "partial" and step.support == "supported" and step.unsupported == []
    assert not answer.sentences[1].flagged and answer.sentences[1].citations


def test_support_trigger_keeps_unbacked_common_words_in_its_query() -> None:
    # "gardener" is not in the documents but says what the missing fact is about: it stays in the
    # query; the unbacked number is a guess and goes.
    drafted = " He was shot by his gardener in 1999."
    flare, tracer = run(script(drafted, GOOD), retriever=MemoryRetriever([*DOCS, REPORT]), trigger="support",
                        follow_names=False, k=2)  # fmt: skip
    answer = flare.answer(QUESTION)
    step = tracer.traces[0].steps[1]
    assert step.decision == "retrieve" and "1999" in " ".join(step.draft_unsupported)
    assert "gardener" in step.queries[0] and "1999" not in step.queries[0]
    assert answer.sentences[1].text == GOOD.strip()


def test_the_sentence_after_a_restatement_is_checked_afresh() -> None:
    # The support trigger accepts a draft that only restates the question (its passages back its
    # words); the model's next sentence replaces it and must be checked itself, not pass on the
    # restatement's verdict.
    echo = " Was the founder of Versace Gianni Versace?"  # a question answers nothing
    lm = ScriptedLM([(lambda p: tail(p).rstrip().endswith("1999."), [])])
    lm.add(lambda p: tail(p).rstrip().endswith("Versace?"), says(BAD))
    lm.add(lambda p: has_docs(p) and tail(p).strip() == FIRST.strip(), says(echo))
    lm.add(lambda p: has_docs(p) and not tail(p).strip(), says(FIRST))
    flare, tracer = run(lm, trigger="support", verify="flag")
    answer = flare.answer(QUESTION)
    step = tracer.traces[0].steps[1]
    assert step.decision == "accept" and step.rejected == [echo.strip()] and step.sentence == BAD.strip()
    assert step.support == "partial" and step.unsupported == ["1999"] and answer.sentences[1].flagged


class QuestionOnly(MemoryRetriever):
    """Finds passages for the question itself and for nothing else."""

    def search(self, query: str, *, k: int, filters: Filters = NO_FILTERS) -> list[Hit]:
        hits = super().search(query, k=k, filters=filters)
        return hits if query == QUESTION else []


@pytest.mark.parametrize("on_missing", ["omit", "stop", "keep"])
def test_missing_evidence_falls_back_to_the_question_then_stops_omits_or_keeps(on_missing: str) -> None:
    lm = ScriptedLM([(lambda p: tail(p).rstrip().endswith("day."), [])])
    lm.add(lambda p: has_docs(p), says(FIRST))
    lm.add(lambda p: tail(p).rstrip().endswith("1990."), says(" It was a sad day."))
    lm.add(lambda p: not has_docs(p), says(DRAFT, low=LOW))
    flare, tracer = run(lm, retriever=QuestionOnly(DOCS), on_missing=on_missing)
    answer = flare.answer(QUESTION)
    step = tracer.traces[0].steps[1]
    assert "Rome" not in step.queries[0] and "1990" not in step.queries[0]
    assert step.queries[-1].startswith(QUESTION)  # the fallback: the question plus the confident words
    texts = [s.text for s in answer.sentences]
    if on_missing == "stop":
        assert answer.stop_reason == "no_evidence" and texts == [FIRST.strip()]
    elif on_missing == "omit":
        assert step.decision == "omit" and texts == [FIRST.strip(), "It was a sad day."]
        assert "Rome" not in answer.render()
    else:
        assert texts == [FIRST.strip(), DRAFT.strip(), "It was a sad day."]
        assert answer.sentences[1].flagged and "[?]" in answer.render()  # kept, and marked in the text


def test_a_reworded_gap_counts_as_the_same_gap() -> None:
    run_state = RunState(QUESTION, Filters(), Settings(), TraceRecord("t", "q", "flare", "m", "r", "", {}), 0.0)
    assert run_state.count_gap(frozenset({"village", "region"})) == 1
    assert run_state.count_gap(frozenset({"village", "lies", "region"})) == 2  # reworded: same gap
    assert run_state.count_gap(frozenset({"river", "source"})) == 1
    lm = ScriptedLM([(lambda p: tail(p).rstrip().endswith("1997."), [])])
    lm.add(lambda p: has_docs(p) and not tail(p).strip(), says(FIRST))
    lm.add(lambda p: has_docs(p), says(" He was shot."))
    lm.add(lambda p: tail(p).rstrip().endswith("shot."), says(" He was fatally shot in Rome in 1990.", low=LOW))
    lm.add(lambda p: not has_docs(p), says(DRAFT, low=LOW))
    flare, tracer = run(lm, max_sentences=3)
    flare.answer(QUESTION)
    steps = tracer.traces[0].steps
    assert steps[1].decision == "retrieve" and steps[2].decision == "cap:max_retries_per_gap"


def test_a_looping_sentence_is_cut_before_the_repeat_and_ends_the_answer() -> None:
    loop = " He was born in Vessa in the village of Vessa in the village of Vessa in the village"
    lm = ScriptedLM([(lambda p: has_docs(p), ScriptedLM.sentence(loop))])
    flare, _ = run(lm)
    answer = flare.answer(QUESTION)
    assert answer.stop_reason == "repetition"
    assert [s.text for s in answer.sentences] == ["He was born in Vessa in the village of…"]  # marked as cut
    assert len(lm.requests[0].completion.tokens) < len(ScriptedLM.split(loop))  # generation stopped early


def test_uncited_facts_are_flagged_and_uncited_prose_is_not() -> None:
    lm = ScriptedLM([(lambda p: tail(p).rstrip().endswith("year."), [])])
    lm.add(lambda p: tail(p).rstrip().endswith("1997."), says(" It was a sad year."))
    lm.add(lambda p: True, says(GOOD))
    flare, _ = run(lm, method="none", verify="flag")
    answer = flare.answer(QUESTION)
    assert [s.flagged for s in answer.sentences] == [True, False]
    assert answer.sentences[0].citations == () and answer.sentences[0].support == "unsupported"


@pytest.mark.parametrize(("said", "flagged"), [("报销须在三个月内完成。", True), ("报销须在10个工作日内完成。", False)])
def test_chinese_sentences_are_checked_with_chinese_words(said: str, flagged: bool) -> None:
    docs = [Passage("z1", "2026年境内差旅的报销须在十个工作日内完成。", "差旅报销办法", {"acl": ["staff"]})]
    lm = ScriptedLM([(lambda p: tail(p).rstrip().endswith("。"), [])])
    lm.add(lambda p: True, ScriptedLM.sentence(said))
    flare, _ = run(lm, retriever=MemoryRetriever(docs), verify="flag")
    sentence = flare.answer("差旅报销需要多久？").sentences[0]
    assert sentence.flagged is flagged
    assert sentence.unsupported == (("三个月",) if flagged else ())
    assert sentence.citations == (() if flagged else (1,))  # 10 = 十, 工作日 and 完成 are in the passage


@pytest.mark.parametrize(("filters", "leaks"), [(Filters.any_of("acl", ["public"]), True), (NO_FILTERS, False)])
def test_a_name_the_corpus_also_names_is_not_a_leak_and_hidden_passages_do_not_count(
    filters: Filters, leaks: bool
) -> None:
    header = "Question: Who inherited the estate?\nAnswer: His niece Allegra did.\n\n"
    template = PromptTemplate("plain", header, "", "\nAnswer:", ("\n",))
    flare, tracer = run(script(" He left the company to Allegra in 1997."), template=template, verify="flag")
    answer = flare.answer(QUESTION, filters=filters)
    step = tracer.traces[0].steps[1]
    # Only a passage the caller may not see names Allegra: under its filters she is the exemplar's.
    assert (step.leaked == ["Allegra"]) is leaks
    assert ("Allegra" in answer.text) is not leaks


def test_support_trigger_searches_for_a_first_sentence_its_documents_do_not_back() -> None:
    # The first sentence is written from the question's documents (v1, v2) like single-time
    # retrieval's, and names a gardener and a year they do not state: it is searched for, and
    # rewritten with the new passage after the question's documents (their prompt prefix kept).
    bad, good = " He was shot by his gardener in 1999.", " His gardener found him shot in Miami Beach in 1997."
    lm = ScriptedLM([(lambda p: tail(p).rstrip().endswith("1997."), [])])
    lm.add(lambda p: "police report" in p, says(good))
    lm.add(lambda p: has_docs(p) and not tail(p).strip(), says(bad))
    flare, tracer = run(lm, retriever=MemoryRetriever([*DOCS, REPORT]), trigger="support", follow_names=False,
                        k=2, verify="flag")  # fmt: skip
    answer = flare.answer(QUESTION)
    first = tracer.traces[0].steps[0]
    assert first.kind == "initial" and first.draft == bad.strip() and first.decision == "retrieve"
    assert "1999" in " ".join(first.draft_unsupported)
    assert "gardener" in first.queries[1] and "1999" not in first.queries[1]
    assert answer.retrievals == len(first.queries) and [s.text for s in answer.sentences] == [good.strip()]
    assert answer.sentences[0].support == "supported" and not answer.sentences[0].flagged
    rewrite = next(p for p in lm.calls if "police report" in p)
    assert rewrite.index(DOCS[0].text) < rewrite.index(DOCS[1].text) < rewrite.index(REPORT.text)
    draft = lm.calls[0]
    prefix = draft.index(DOCS[1].text) + len(DOCS[1].text)
    assert rewrite[:prefix] == draft[:prefix]


def test_support_trigger_keeps_the_draft_when_its_search_finds_nothing_new() -> None:
    # The draft's search returns the documents it was written from: the same prompt would write
    # the same sentence, so no second call is made and the draft stays, flagged.
    lm = script(BAD, GOOD)
    flare, tracer = run(lm, trigger="support", follow_names=False, k=2, verify="flag")
    answer = flare.answer(QUESTION)
    step = tracer.traces[0].steps[1]
    assert step.decision == "retrieve" and step.queries and "1999" not in step.queries[0]
    assert answer.retrievals == 1 + len(step.queries) and answer.sentences[1].text == BAD.strip()
    assert answer.sentences[1].flagged
    asked = [p for p in lm.calls if has_docs(p) and tail(p).strip() == FIRST.strip()]
    assert len(asked) == 1  # the draft only


BICYCLE = [
    Passage("b1", "The Seserlo bicycle is made by Zendek Textiles. It went on sale in 2015.", "Seserlo bicycle"),
    Passage("b2", "The Seserlo bicycle comes with a guarantee of five years.", "Seserlo bicycle"),
    Passage("c1", "Vrunsha Foods has its head office in Genbalir.", "Vrunsha Foods"),
    Passage("c2", "Zendek Textiles has its head office in Dosborser.", "Zendek Textiles"),
]


def test_names_in_takes_each_run_of_capitalised_words_as_one_name() -> None:
    text = "The Seserlo bicycle is made by Zendek Textiles. It went on sale in May 2015 in Dosborser."
    assert names_in(text) == ["Seserlo", "Zendek Textiles", "Dosborser"]
    assert names_in("It went on sale in 2015.") == []


def test_support_trigger_hops_through_the_entity_the_documents_name_for_the_draft() -> None:
    # The draft describes the maker ("the company that makes ...") without naming it; its own words
    # find the bicycle's passages again, the maker's name from them finds the maker's head office.
    question = "In which town does the company that makes the Seserlo bicycle have its head office?"
    bad = " The company that makes the Seserlo bicycle has its head office in Genbalir."
    good = " Zendek Textiles makes the Seserlo bicycle and has its head office in Dosborser."
    lm = ScriptedLM([(lambda p: tail(p).rstrip().endswith("Dosborser."), [])])
    lm.add(lambda p: "Dosborser" in p.rsplit("Question:", 1)[0], says(good))
    lm.add(lambda p: not tail(p).strip(), says(bad))
    flare, tracer = run(lm, retriever=MemoryRetriever(BICYCLE), trigger="support", k=3, verify="flag")
    answer = flare.answer(question)
    first = tracer.traces[0].steps[0]
    assert first.draft == bad.strip() and any(q.startswith("Zendek Textiles") for q in first.queries)
    ids = [r.id for r in first.retrieved]
    asked, rewrite = ids[:3], ids[3:]  # the question's search (k=3), then the draft's
    assert "c2" in rewrite and not set(asked) & set(rewrite)  # it looks past what the draft had
    assert [s.text for s in answer.sentences] == [good.strip()] and not answer.sentences[0].flagged


def test_hop_queries_need_a_name_the_question_and_draft_do_not_say() -> None:
    # With trigger=min there are no question documents to hop through: no hop query.
    lm = ScriptedLM([(lambda p: True, says(" He was shot in Rome in 1990."))])
    flare, tracer = run(lm, trigger="min", max_sentences=2)
    flare.answer(QUESTION)
    assert not any(q.startswith(("Gianni", "Versace")) for st in tracer.traces[0].steps[1:] for q in st.queries[1:])


def test_new_docs_after_rewrites_in_a_follow_up_turn_that_extends_the_drafts_prompt() -> None:
    # new_docs=after: the hop's passage is read in a turn after the answer so far, so the rewrite's
    # prompt is the draft's prompt (cached by the backend) plus the new passage and one line.
    question = "In which town does the company that makes the Seserlo bicycle have its head office?"
    bad = " The company that makes the Seserlo bicycle has its head office in Genbalir."
    good = " Zendek Textiles makes the Seserlo bicycle and has its head office in Dosborser."
    template = PromptTemplate.chatml()
    followup = FOLLOW_UP["en"]
    more = " It went on sale in 2015."
    lm = ScriptedLM([(lambda p: p.rstrip().endswith("2015."), [])])
    lm.add(lambda p: p.rstrip().endswith("Dosborser."), says(more))
    # The follow-up turn ends after its one sentence; the answer goes on from the next draft.
    lm.add(lambda p: followup in p and "[4] Zendek Textiles: " in p.rsplit(followup, 1)[0],
           ScriptedLM.sentence(good))  # fmt: skip
    lm.add(lambda p: p.endswith("<|im_start|>assistant\n"), says(bad))
    flare, tracer = run(lm, template=template, retriever=MemoryRetriever(BICYCLE), trigger="support", k=3,
                        verify="flag", new_docs="after")  # fmt: skip
    answer = flare.answer(question)
    assert [s.text for s in answer.sentences] == [good.strip(), more.strip()] and not answer.sentences[0].flagged
    draft = lm.calls[0]
    rewrite = next(p for p in lm.calls if followup in p)
    head = draft.removesuffix("<|im_start|>assistant\n")
    assert rewrite.startswith(head) and rewrite.index("Zendek Textiles has its head office") > len(head)
    assert answer.sentences[0].citations and tracer.traces[0].steps[0].decision == "retrieve"


def test_render_followup_numbers_on_and_falls_back_to_one_block_for_plain_templates() -> None:
    docs, new = BICYCLE[:2], BICYCLE[3:]
    chat = PromptTemplate.chatml()
    p = chat.render_followup(docs, new, "Where?", "It is made by Zendek Textiles.")
    assert p.startswith(chat.render(docs, "Where?", "It is made by Zendek Textiles."))
    assert "\n[3] Zendek Textiles: " in p and p.endswith(FOLLOW_UP["en"] + chat.turn_close)
    zh = PromptTemplate.default("chatml", "zh")
    assert zh.render_followup(docs, new, "在哪里？", "").endswith(FOLLOW_UP["zh"] + zh.turn_close)
    plain = PromptTemplate.plain()
    assert plain.render_followup(docs, new, "Where?", "") == plain.render([*docs, *new], "Where?", "")




@pytest.mark.parametrize("follow", [True, False])
def test_follow_names_looks_up_the_name_a_backed_sentence_brings_in(follow: bool) -> None:
    # "The performer was Mara Ulvin." is backed by the question's documents, so nothing searches;
    # with follow_names her own passage is looked up and the next draft is written from it.
    question = "Where did the performer of the song Blue Kettle die?"
    first, second = " The performer of Blue Kettle was Mara Ulvin.", " Mara Ulvin died in Korsk."
    lm = ScriptedLM([(lambda p: p.rstrip().endswith("Korsk."), [])])
    lm.add(lambda p: "died in Korsk" in p.rsplit("Question:", 1)[0] and p.rstrip().endswith("Ulvin."), says(second))
    lm.add(lambda p: p.rstrip().endswith("Ulvin."), [])
    lm.add(lambda p: not tail(p).strip(), says(first))
    flare, tracer = run(lm, retriever=MemoryRetriever(SONG), trigger="support", k=2, verify="flag",
                        follow_names=follow)  # fmt: skip
    answer = flare.answer(question)
    steps = tracer.traces[0].steps
    if not follow:
        assert [s.text for s in answer.sentences] == [first.strip()] and answer.retrievals == 1
        return
    assert [s.text for s in answer.sentences] == [first.strip(), second.strip()]
    (query,) = steps[1].queries  # the name, with the question's words the sentence lacks
    assert query.startswith("Mara Ulvin ") and "die" in query.split() and "Kettle" not in query
    assert [r.id for r in steps[1].retrieved] == ["p1"]
    # skip_known_names is on: the name's best match may be the song's page, already read, but it
    # is not her own page, so her name is still followed.
    assert not steps[1].known
    assert answer.sentences[1].citations and not answer.sentences[1].flagged


@pytest.mark.parametrize(
    ("title", "name", "own"),
    [("Mara Ulvin", "Mara Ulvin", True), ("Detroit (film)", "Detroit", True), ("Blue Kettle", "Mara Ulvin", False),
     ("Mara Ulvin fans", "Mara Ulvin", False), ("", "Mara Ulvin", False), ("(1971)", "Mara Ulvin", False)],
)
def test_titled_says_whether_a_passage_is_the_names_own_page(title: str, name: str, own: bool) -> None:
    assert titled(Passage("x", "text", title), name) is own


@pytest.mark.parametrize("follow_k", [1, 2])
def test_follow_k_reads_the_best_passages_of_each_name(follow_k: int) -> None:
    # The name's search finds two passages (her own ranks first): follow_k says how many join
    # the next draft's prompt.
    noise = Passage("q1", "Mara Ulvin fans meet every spring.", "Mara Ulvin fans")
    question = "Where did the performer of the song Blue Kettle die?"
    first, second = " The performer of Blue Kettle was Mara Ulvin.", " Mara Ulvin died in Korsk."
    lm = ScriptedLM([(lambda p: p.rstrip().endswith("Korsk."), [])])
    lm.add(lambda p: p.rstrip().endswith("Ulvin."), says(second))
    lm.add(lambda p: not tail(p).strip(), says(first))
    flare, tracer = run(lm, retriever=MemoryRetriever([*SONG, noise]), trigger="support", k=2, verify="flag",
                        follow_k=follow_k)  # fmt: skip
    flare.answer(question)
    followed = [r.id for r in tracer.traces[0].steps[1].retrieved]
    assert len(followed) == follow_k and followed == ["p1", "q1"][:follow_k]
    draft_prompt = next(p for p in lm.calls if p.rstrip().endswith("Ulvin."))
    for passage in (SONG[2], noise):  # in the next draft's prompt exactly when it was read
        assert (passage.text in draft_prompt) == (passage.id in followed)


@pytest.mark.parametrize("floor", [0.0, 0.9])
def test_found_floor_leaves_a_weak_match_of_a_name_unread(floor: float) -> None:
    # The name's search finds her own passage and a fans' page that shares half as many of the
    # query's words: with a floor above one half the weak one is not read, and the trace says so.
    first, second = " The performer of Blue Kettle was Mara Ulvin.", " Mara Ulvin died in Korsk."
    lm = ScriptedLM([(lambda p: p.rstrip().endswith("Korsk."), [])])
    lm.add(lambda p: p.rstrip().endswith("Ulvin."), says(second))
    lm.add(lambda p: not tail(p).strip(), says(first))
    flare, tracer = run(lm, retriever=MemoryRetriever([*SONG, FANS]), trigger="support", k=2, verify="flag",
                        follow_k=2, found_floor=floor)  # fmt: skip
    answer = flare.answer("Where did the performer of the song Blue Kettle die?")
    step = tracer.traces[0].steps[1]
    scores = {r.id: r.score for r in step.retrieved}
    assert scores["q1"] == scores["p1"] / 2
    assert step.unread == (["q1"] if floor else [])
    draft_prompt = next(p for p in lm.calls if p.rstrip().endswith("Ulvin."))
    assert (FANS.text in draft_prompt) is not floor and SONG[2].text in draft_prompt
    assert answer.sentences[1].citations and not answer.sentences[1].flagged


@pytest.mark.parametrize("skip", [False, True])
def test_skip_known_names_follows_no_name_whose_own_passage_is_read(skip: bool) -> None:
    # The question says "singer": its search (k=3) already reads her own passage. Her name's search
    # ranks it first again; past it come the rest of her page (same title: read) and a weaker match
    # of another page (the fans'), read unless skip_known_names.
    first, second = " The performer of Blue Kettle was Mara Ulvin.", " Mara Ulvin died in Korsk."
    lm = ScriptedLM([(lambda p: p.rstrip().endswith("Korsk."), [])])
    lm.add(lambda p: p.rstrip().endswith("Ulvin."), says(second))
    lm.add(lambda p: not tail(p).strip(), says(first))
    albums = Passage("p2", "Mara Ulvin recorded nine albums.", "Mara Ulvin")
    flare, tracer = run(lm, retriever=MemoryRetriever([*SONG, FANS, albums]), trigger="support", k=3,
                        verify="flag", follow_k=2, found_floor=0.0, skip_known_names=skip)  # fmt: skip
    answer = flare.answer("Where did the singer of the song Blue Kettle die?")
    first_step, step = tracer.traces[0].steps[:2]
    assert "p1" in [r.id for r in first_step.retrieved], first_step.retrieved
    assert step.queries and step.queries[0].startswith("Mara Ulvin")
    assert step.known == (["p1"] if skip else [])
    assert [r.id for r in step.retrieved] == (["p2"] if skip else ["p2", "q1"])
    draft_prompt = next(p for p in lm.calls if p.rstrip().endswith("Ulvin."))
    assert (FANS.text in draft_prompt) is not skip and SONG[2].text in draft_prompt and albums.text in draft_prompt
    assert answer.sentences[1].citations and not answer.sentences[1].flagged


def test_a_draft_backed_by_a_passage_the_answer_cites_needs_no_search() -> None:
    # The second sentence's rewrite read Mara Ulvin's passage, which later drafts do not get;
    # "So the answer is Korsk." restates it and is backed by the passage it cites: no search.
    question = "Where did the performer of the song Blue Kettle die?"
    first, second = " The performer of Blue Kettle was Mara Ulvin.", " Mara Ulvin died in Korsk."
    lm = ScriptedLM([(lambda p: p.rstrip().endswith("answer is Korsk."), [])])
    lm.add(lambda p: p.rstrip().endswith("died in Korsk."), says(" So the answer is Korsk."))
    lm.add(lambda p: p.rstrip().endswith("Ulvin."), says(second))
    lm.add(lambda p: not tail(p).strip(), says(first))
    flare, tracer = run(lm, retriever=MemoryRetriever(SONG), trigger="support", k=2, verify="flag",
                        follow_names=False)  # fmt: skip
    answer = flare.answer(question)
    steps = tracer.traces[0].steps
    assert [s.text for s in answer.sentences] == [first.strip(), second.strip(), "So the answer is Korsk."]
    assert steps[1].decision == "retrieve" and [r.id for r in steps[1].retrieved] == ["p1"]
    assert steps[2].decision == "accept" and not steps[2].queries and "p1" in steps[2].evidence
    korsk = {c.passage_id: c.n for c in answer.sources}["p1"]
    assert answer.sentences[1].citations == answer.sentences[2].citations == (korsk,)
    assert not answer.sentences[2].flagged and answer.retrievals == 2


def test_a_not_given_sentence_is_shown_without_citation_or_mark() -> None:
    # "The documents do not say where Mara Ulvin died." names her, and her passage is among the
    # documents; it states no fact, so it cites nothing and is not marked [?].
    lm = ScriptedLM([(lambda p: p.rstrip().endswith("died."), [])])
    lm.add(lambda p: not tail(p).strip(), says(" The documents do not say where Mara Ulvin died."))
    flare, _ = run(lm, retriever=MemoryRetriever(SONG), method="single", verify="flag")
    (sentence,) = flare.answer("Where did Mara Ulvin die?").sentences
    assert sentence.support == "no_claims" and sentence.citations == () and not sentence.flagged


@pytest.mark.parametrize("early", [True, False])
def test_draft_before_follow_keeps_a_conclusion_that_repeats_the_answer(early: bool) -> None:
    # "So the answer is Mara Ulvin." names only what the answer said, and the question asks no
    # more: drafted before the search for her name, it is kept and the search never happens.
    lm = song_lm(lambda p: p.rstrip().endswith("answer is Mara Ulvin."),
                  (lambda p: p.rstrip().endswith("Ulvin."), " So the answer is Mara Ulvin."))  # fmt: skip
    flare, tracer = run(lm, retriever=MemoryRetriever(SONG), trigger="support", k=2, verify="flag",
                        draft_before_follow=early)  # fmt: skip
    answer = flare.answer("Who was the performer of Blue Kettle?")
    assert [s.text for s in answer.sentences][1] == "So the answer is Mara Ulvin."
    step = tracer.traces[0].steps[1]
    assert step.decision == "accept" and step.predraft is None and not answer.sentences[1].flagged
    if early:
        assert answer.retrievals == 1 and not step.queries and "predraft" in step.timings
    else:
        assert answer.retrievals == 2 and step.queries[0].startswith("Mara Ulvin")


def test_draft_before_follow_searches_when_the_draft_says_something_new_or_stops_at_the_bridge() -> None:
    # Asked where she died, "So the answer is Mara Ulvin." after one sentence stops at the bridge:
    # dropped, her name is searched for and the draft is written from her passage. The next
    # conclusion repeats "Korsk" from a two-sentence answer: kept, and "Korsk" is never searched.
    lm = song_lm(lambda p: p.rstrip().endswith("answer is Korsk."),
                  (lambda p: p.rstrip().endswith("died in Korsk."), " So the answer is Korsk."),
                  (lambda p: "She died in Korsk" in p and p.rstrip().endswith("Ulvin."), " Mara Ulvin died in Korsk."),
                  (lambda p: p.rstrip().endswith("Ulvin."), " So the answer is Mara Ulvin."))  # fmt: skip
    flare, tracer = run(lm, retriever=MemoryRetriever(SONG), trigger="support", k=2, verify="flag",
                        draft_before_follow=True)  # fmt: skip
    answer = flare.answer("Where did the performer of the song Blue Kettle die?")
    assert [s.text for s in answer.sentences][1:] == ["Mara Ulvin died in Korsk.", "So the answer is Korsk."]
    _, hop, end = tracer.traces[0].steps[:3]
    assert hop.predraft == "So the answer is Mara Ulvin." and hop.queries[0].startswith("Mara Ulvin")
    assert end.predraft is None and not end.queries and answer.retrievals == 2
    assert not any(s.flagged for s in answer.sentences)


@pytest.mark.parametrize("lazy", [True, False])
def test_lazy_follow_searches_a_name_only_when_a_draft_needs_it(lazy: bool) -> None:
    # "Blue Kettle was released in 1971." is backed by the song's passage at hand: with
    # lazy_follow it is kept and Mara Ulvin's name waits. The next draft says where she died,
    # which nothing at hand backs: dropped, her name (from two sentences back) is searched for,
    # and the sentence is written again from her passage.
    lm = song_lm(lambda p: p.rstrip().endswith("died in Korsk."),
                 (lambda p: p.rstrip().endswith("1971."), " Mara Ulvin died in Korsk."),
                 (lambda p: p.rstrip().endswith("Ulvin."), " Blue Kettle was released in 1971."))  # fmt: skip
    flare, tracer = run(lm, retriever=MemoryRetriever(SONG), trigger="support", k=1, verify="flag",
                        found_floor=0.0, lazy_follow=lazy)  # fmt: skip
    answer = flare.answer("When was Blue Kettle released, and where did its performer die?")
    first, released, died = tracer.traces[0].steps[:3]
    assert [r.id for r in first.retrieved] == ["s1"]
    assert [s.text for s in answer.sentences][1:] == ["Blue Kettle was released in 1971.", "Mara Ulvin died in Korsk."]
    searched = died if lazy else released
    assert searched.queries[0].startswith("Mara Ulvin") and "p1" in [r.id for r in searched.retrieved]
    if lazy:
        assert released.decision == "accept" and not released.queries and released.predraft is None
        assert died.predraft == "Mara Ulvin died in Korsk." and "predraft" in died.timings
    else:
        assert not died.queries and died.predraft is None and "predraft" not in released.timings
    assert not any(s.flagged for s in answer.sentences) and answer.sentences[2].citations
    assert answer.retrievals == 3  # the question, her name, and the last sentence's "Korsk" either way


def test_restates_means_no_new_name_or_number() -> None:
    said = [Sentence("The husband of Serena Evans was Daniel Flynn.", False)]
    assert restates("So the answer is Daniel Flynn.", said)
    assert restates("He was a painter.", said)  # no name or number at all
    assert not restates("Daniel Flynn was born in Evesham.", said)
    assert not restates("Daniel Flynn was born in 1950.", said)


def test_repeats_answer_needs_known_names_and_a_covered_question() -> None:
    said = [Sentence("The husband of Serena Evans was Daniel Flynn.", False)]
    two = [*said, Sentence("Daniel Flynn was born in Evesham.", False)]
    question = "Where was the husband of Serena Evans born?"
    assert repeats_answer("So the answer is Evesham.", question, two)
    assert not repeats_answer("So the answer is Worcester.", question, two)  # a new name
    assert not repeats_answer("So the answer is yes.", question, two)  # states no name or number
    assert not repeats_answer("So the answer is Daniel Flynn.", question, said)  # "born" not yet said
    assert repeats_answer("So the answer is Daniel Flynn.", "Who was the husband of Serena Evans?", said)
    assert not repeats_answer("So the answer is Daniel Flynn.", question, [])


def test_excerpt_keeps_the_first_sentence_and_those_sharing_a_query_word() -> None:
    text = "Mara Ulvin was a singer. She toured Norway twice. Ulvin died in Korsk. She liked tea."
    p = Passage("a", text, "Mara Ulvin")
    cut = excerpt(p, ["Mara Ulvin died"])
    assert cut.text == "Mara Ulvin was a singer. … Ulvin died in Korsk. …"
    assert (cut.id, cut.title) == ("a", "Mara Ulvin")
    assert excerpt(p, ["Ulvin Norway tea"]) is p  # every sentence shares a word: unchanged
    short = Passage("b", "Mara Ulvin was a singer. She toured Norway twice.")
    assert excerpt(short, ["Korsk"]) is short  # two sentences are read whole


def test_excerpt_can_keep_only_the_sentences_sharing_the_most_query_words() -> None:
    text = ("Mara Ulvin was a singer. She toured Norway twice. Ulvin died in Korsk in 1999. "
            "Korsk mourned Ulvin. She liked tea.")  # fmt: skip
    p = Passage("a", text, "Mara Ulvin")
    assert excerpt(p, ["Ulvin died Korsk"], most=1).text == "Mara Ulvin was a singer. … Ulvin died in Korsk in 1999. …"
    both = "Mara Ulvin was a singer. … Ulvin died in Korsk in 1999. Korsk mourned Ulvin. …"
    assert excerpt(p, ["Ulvin died Korsk"], most=2).text == both == excerpt(p, ["Ulvin died Korsk"]).text
    # a tie goes to the earlier sentence; a sentence sharing no word is never kept
    assert excerpt(p, ["Norway Korsk"], most=1).text == "Mara Ulvin was a singer. She toured Norway twice. …"
    assert excerpt(p, ["Norway"], most=3).text == "Mara Ulvin was a singer. She toured Norway twice. …"


@pytest.mark.parametrize("trim", [True, False])
def test_trim_found_reads_a_followed_passage_as_its_excerpt(trim: bool) -> None:
    long_bio = Passage("p1", "Mara Ulvin was a singer. She toured Norway twice. Ulvin died in Korsk in 1999.",
                       "Mara Ulvin")  # fmt: skip
    lm = song_lm(lambda p: p.rstrip().endswith("Korsk."),
                  (lambda p: p.rstrip().endswith("Ulvin."), " Mara Ulvin died in Korsk."))  # fmt: skip
    flare, tracer = run(lm, retriever=MemoryRetriever([*SONG[:2], long_bio]), trigger="support", k=2,
                        verify="flag", trim_found=trim)  # fmt: skip
    answer = flare.answer("Where did the performer of the song Blue Kettle die?")
    prompt = next(p for p in lm.calls if p.rstrip().endswith("Ulvin."))
    assert ("toured Norway" in prompt) is not trim and "Ulvin died in Korsk in 1999." in prompt
    assert answer.sentences[1].citations and not answer.sentences[1].flagged
    assert [r.id for r in tracer.traces[0].steps[1].retrieved] == ["p1"]


def test_a_rewrite_searches_for_the_town_a_pronoun_points_back_to() -> None:
    # "It" is Baberri, named by the opening word of the sentence before (not the region that
    # sentence goes on to name): the query carries "Baberri" and finds the town's river.
    towns = [
        Passage("b1", "Baberri is a market town in the Lennelkes region.", "Baberri"),
        Passage("b2", "Baberri lies on the Tokus River, which floods in spring.", "Baberri"),
        Passage("l1", "Lennelkes is a region of hills, and the Kinshu River crosses it.", "Lennelkes"),
    ]
    first = " Baberri is part of the Lennelkes region."
    guess, right = " It lies on the Kinshu River.", " It lies on the Tokus River."
    lm = ScriptedLM([(lambda p: tail(p).rstrip().endswith("River."), [])])
    lm.add(lambda p: "Tokus" in p and tail(p).strip() == first.strip(), says(right))
    lm.add(lambda p: not tail(p).strip(), says(first))
    lm.add(lambda p: tail(p).strip() == first.strip(), says(guess))
    flare, tracer = run(lm, retriever=MemoryRetriever(towns), trigger="support", verify="flag", k=1,
                        follow_names=False)  # fmt: skip
    answer = flare.answer("Which region is Baberri in?")
    assert [s.text for s in answer.sentences] == [first.strip(), right.strip()]
    assert not answer.sentences[1].flagged
    rewrite = tracer.traces[0].steps[1]
    assert rewrite.draft == guess.strip() and any("Baberri" in q for q in rewrite.queries)
