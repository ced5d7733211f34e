"""Every branch of the FLARE loop, driven by the scripted LM and the in-memory retriever."""

from __future__ import annotations

import pytest

from flare.config import Settings
from flare.engine.events import Finished, Rewriting, Searching, SentenceAccepted
from flare.engine.loop import Flare
from flare.engine.step import first_piece
from flare.errors import InputError, ModelError, RetrieverError
from flare.retrieve.filters import Filters
from flare.testing.memory import MemoryRetriever
from flare.testing.scripted import ScriptedLM
from flare.trace.tracers import MemoryTracer
from flare.types import Completion, Hit, Passage, TokenLogprob
from tests.engine.support import BARE, DOCS, has_docs

FIRST = " The founder of Versace was Gianni Versace."
DRAFT = " He was shot in Rome in 1990."
REGEN = " He was shot in Miami Beach in 1997."


def _tail(prompt: str) -> str:
    return prompt.rsplit("Answer:", 1)[-1]


def says(text: str, low: dict[str, float] | None = None) -> list[tuple[str, float]]:
    """A response that goes on after ``text`` (as a real model would), so it is not the end."""
    return ScriptedLM.sentence(text + " And", low=low)


def script(draft: str = DRAFT, low: dict[str, float] | None = None, end: bool = True) -> ScriptedLM:
    """First sentence from docs; then an unsure draft about the death; regeneration from docs."""
    low = {"Rome": 0.1, "1990": 0.2} if low is None else low
    return ScriptedLM(
        [
            (lambda p: _tail(p).endswith(("1997.", "1990.")), [] if end else says(" Done.")),
            (lambda p: has_docs(p) and p.endswith("Answer:"), says(FIRST)),
            (lambda p: has_docs(p) and "Versace." in p, says(REGEN)),
            (lambda p: not has_docs(p), says(draft, low=low)),
        ]
    )


def engine(lm: ScriptedLM, **settings: object) -> tuple[Flare, MemoryTracer, MemoryRetriever]:
    """The paper's loop (min trigger, no verification) unless a test says otherwise."""
    tracer = MemoryTracer()
    retriever = MemoryRetriever(DOCS)
    settings = {"trigger": "min", "verify": "off", **settings}
    return Flare(lm, retriever, Settings(**settings), template=BARE, tracer=tracer), tracer, retriever  # type: ignore[arg-type]


def test_unsure_draft_is_masked_retrieved_and_regenerated() -> None:
    lm = script()
    flare, tracer, _ = engine(lm)
    answer = flare.answer("Why did the founder of Versace die?")
    assert [s.text for s in answer.sentences] == [FIRST.strip(), REGEN.strip()]
    assert answer.stop_reason == "end"
    step = tracer.traces[0].steps[1]
    assert step.draft == DRAFT.strip()
    assert {t for t, _ in step.low_tokens} == {" Rome", " 1990"}
    assert step.decision == "retrieve"
    assert step.queries == ["He was shot in in."] or "Rome" not in step.queries[0]
    assert "1990" not in step.queries[0] and "shot" in step.queries[0]
    assert step.retrieved[0].id == "v2"
    assert answer.sentences[1].retrieved and answer.sentences[1].grounded
    assert DRAFT.strip() not in answer.render()


def test_confident_draft_is_committed_without_a_second_call() -> None:
    lm = script(low={})
    flare, tracer, _ = engine(lm)
    answer = flare.answer("Why did the founder of Versace die?")
    assert answer.sentences[1].text == DRAFT.strip()
    assert not answer.sentences[1].retrieved
    step = tracer.traces[0].steps[1]
    assert step.decision == "accept" and step.lm_calls == 1
    assert answer.retrievals == 1  # only the first sentence's retrieval with the question


@pytest.mark.parametrize(("theta", "decision"), [(0.0, "accept"), (1.0, "retrieve")])
def test_theta_zero_never_and_one_always_retrieves(theta: float, decision: str) -> None:
    flare, tracer, _ = engine(script(low={}), theta=theta)
    flare.answer("Why did the founder of Versace die?")
    assert tracer.traces[0].steps[1].decision == decision


def test_mean_trigger_tolerates_one_unsure_word() -> None:
    lm = script(low={"Rome": 0.5})
    flare, tracer, _ = engine(lm, trigger="mean", theta=0.8)
    flare.answer("Why did the founder of Versace die?")
    assert tracer.traces[0].steps[1].decision == "accept"
    flare2, tracer2, _ = engine(script(low={"Rome": 0.5}), trigger="min", theta=0.8)
    flare2.answer("Why did the founder of Versace die?")
    assert tracer2.traces[0].steps[1].decision == "retrieve"


def test_dynamic_trigger_is_stricter_for_fact_dense_sentences() -> None:
    prose = " It was a sad day for fashion."
    lm = script(draft=prose, low={"sad": 0.5})
    flare, tracer, _ = engine(lm, trigger="dynamic", theta=0.8, theta_prose=0.4)
    flare.answer("Why did the founder of Versace die?")
    assert tracer.traces[0].steps[1].decision == "accept"  # prose: 0.5 >= theta_prose
    flare2, tracer2, _ = engine(script(low={"Rome": 0.5, "1990": 0.9}), trigger="dynamic", theta=0.8)
    flare2.answer("Why did the founder of Versace die?")
    assert tracer2.traces[0].steps[1].decision == "retrieve"  # names and a year: 0.5 < theta


def test_explicit_queries_ask_the_lm_one_question_per_span() -> None:
    lm = script()
    lm.rules.insert(0, ("Write one short question", ScriptedLM.sentence(" Where was Versace shot?")))
    flare, tracer, _ = engine(lm, query="explicit")
    flare.answer("Why did the founder of Versace die?")
    step = tracer.traces[0].steps[1]
    assert step.queries == ["Where was Versace shot?"]
    asked = [c for c in lm.calls if "Write one short question" in c]
    assert len(asked) == 1 and '"Rome in 1990"' in asked[0]  # neighbouring low words merge
    assert step.lm_calls == 3  # draft, one question, regeneration


def test_query_with_question_prepends_the_question() -> None:
    flare, tracer, _ = engine(script(), query_with_question=True)
    flare.answer("Why did the founder of Versace die?")
    assert tracer.traces[0].steps[1].queries[0].startswith("Why did the founder of Versace die?")


def test_filters_apply_to_every_search_and_cannot_widen() -> None:
    lm = script()
    flare, _, retriever = engine(lm)
    acl = Filters.any_of("acl", ["public"])
    answer = flare.answer("Why did the founder of Versace die?", filters=acl)
    assert len(retriever.queries) == 2
    assert all(f == acl for _, f in retriever.queries)
    assert all(c.passage_id != "s1" for c in answer.sources)


def test_a_retriever_that_leaks_past_filters_is_stopped() -> None:
    class Leaky(MemoryRetriever):
        def search(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
            return [Hit(DOCS[2], 9.0)]

    flare = Flare(script(), Leaky(DOCS), Settings(), template=BARE)
    with pytest.raises(RetrieverError, match="outside the request's filters"):
        flare.answer("Who got the company?", filters=Filters.any_of("acl", ["public"]))


def test_no_evidence_stops_the_answer_or_keeps_an_ungrounded_draft() -> None:
    nothing = Filters.parse(["year=1500"])
    flare, _, _ = engine(script())
    assert flare.answer("Why did the founder of Versace die?", filters=nothing).stop_reason == "no_evidence"

    lm = ScriptedLM([(lambda p: True, says(" Unknown.", low={"Unknown": 0.1}))])
    flare2 = Flare(lm, MemoryRetriever(DOCS), Settings(on_missing="keep"), template=BARE)
    answer = flare2.answer("Why did the founder of Versace die?", filters=nothing)
    assert answer.sentences[0].text == "Unknown." and not answer.sentences[0].grounded


def test_max_retrievals_keeps_drafts_unretrieved_and_flagged() -> None:
    flare, tracer, _ = engine(script(), max_retrievals=1)
    answer = flare.answer("Why did the founder of Versace die?")
    assert answer.retrievals == 1
    assert answer.caps_hit == ("max_retrievals",)
    assert answer.sentences[1].text == DRAFT.strip() and not answer.sentences[1].grounded
    assert tracer.traces[0].steps[1].decision == "cap:max_retrievals"
    assert answer.sentences[1].citations == ()


def test_the_same_gap_is_not_retrieved_twice() -> None:
    lm = ScriptedLM(
        [
            (lambda p: has_docs(p) and p.endswith("Answer:"), says(FIRST)),
            (lambda p: has_docs(p), says(" Versace died young.")),
            (lambda p: True, says(" He was shot in 1990.", low={"1990": 0.1})),
        ]
    )
    flare, tracer, _ = engine(lm, max_sentences=4)
    answer = flare.answer("Why did the founder of Versace die?")
    decisions = [s.decision for s in tracer.traces[0].steps]
    assert decisions[1] == "retrieve"
    assert "cap:max_retries_per_gap" in decisions
    assert "max_retries_per_gap" in answer.caps_hit


def test_caps_on_sentences_tokens_and_time() -> None:
    flare, _, _ = engine(script(end=False), max_sentences=2)
    assert flare.answer("Why did the founder of Versace die?").stop_reason == "max_sentences"
    flare, _, _ = engine(script(end=False), max_output_tokens=10)
    answer = flare.answer("Why did the founder of Versace die?")
    assert answer.stop_reason == "max_output_tokens" and len(answer.sentences) == 1
    flare, _, _ = engine(script(), max_seconds=1e-9)
    answer = flare.answer("Why did the founder of Versace die?")
    assert answer.stop_reason == "max_seconds" and answer.sentences == ()


def test_repeated_sentence_ends_the_answer() -> None:
    lm = ScriptedLM([(lambda p: True, says(" Versace was a designer."))])
    flare, _, _ = engine(lm, method="none")
    answer = flare.answer("Who was Versace?")
    assert answer.stop_reason == "repetition" and len(answer.sentences) == 1


def test_single_retrieval_keeps_the_first_documents_and_never_drafts() -> None:
    lm = script()
    flare, tracer, retriever = engine(lm, method="single")
    answer = flare.answer("Why did the founder of Versace die?")
    assert len(retriever.queries) == 1 and answer.retrievals == 1
    assert all(has_docs(p) for p in lm.calls)
    assert [s.kind for s in tracer.traces[0].steps] == ["initial", "generate", "generate"]
    assert tracer.traces[0].steps[-1].sentence == ""  # the model ended the answer


def test_no_retrieval_never_searches() -> None:
    lm = script()
    flare, _, retriever = engine(lm, method="none")
    answer = flare.answer("Why did the founder of Versace die?")
    assert retriever.queries == [] and answer.sources == ()
    assert not any(has_docs(p) for p in lm.calls)


def test_keep_first_docs_puts_the_question_documents_in_drafts() -> None:
    lm = script()
    flare, _, _ = engine(lm, keep_first_docs=True, theta=0.0)
    flare.answer("Why did the founder of Versace die?")
    assert all(has_docs(p) for p in lm.calls)


def test_conditional_commit_keeps_the_draft_when_documents_look_irrelevant() -> None:
    # The masked query "He was shot painting in in" has two content words; the documents back
    # only "shot", so they cover half of it: below 1.0 the draft is kept, marked ungrounded.
    draft = " He was shot painting in Rome in 1990."
    flare, tracer, _ = engine(script(draft=draft), conditional_commit=True, min_relevance=1.0)
    answer = flare.answer("Why did the founder of Versace die?")
    assert tracer.traces[0].steps[1].decision == "irrelevant"
    assert answer.sentences[1].text == draft.strip() and not answer.sentences[1].grounded
    assert answer.sentences[1].flagged and "[?]" in answer.render()


def test_conditional_commit_regenerates_when_documents_back_the_query() -> None:
    draft = " He was shot painting in Rome in 1990."
    flare, tracer, _ = engine(script(draft=draft), conditional_commit=True, min_relevance=0.5)
    answer = flare.answer("Why did the founder of Versace die?")
    assert tracer.traces[0].steps[1].decision == "retrieve"
    assert answer.sentences[1].text == REGEN.strip()


def test_stream_never_shows_a_rejected_draft() -> None:
    flare, _, _ = engine(script())
    events = list(flare.stream("Why did the founder of Versace die?"))
    kinds = [type(e) for e in events]
    assert kinds == [Searching, SentenceAccepted, Searching, Rewriting, SentenceAccepted, Finished]
    assert all("Rome" not in repr(e) for e in events if not isinstance(e, Finished))
    accepted = [e for e in events if isinstance(e, SentenceAccepted)]
    assert [c.passage_id for e in accepted for c in e.new_sources] == ["v1", "v2"]


def test_citations_number_sources_in_order_and_render_markers() -> None:
    flare, _, _ = engine(script())
    answer = flare.answer("Why did the founder of Versace die?")
    assert [c.passage_id for c in answer.sources] == ["v1", "v2"]
    # Both passages name Gianni Versace; only the second says how he died.
    assert answer.sentences[0].citations == (1, 2) and answer.sentences[1].citations == (2,)
    rendered = answer.render()
    assert "Gianni Versace[1][2]." in rendered and "1997[2]." in rendered
    assert "[2] Gianni Versace (v2)" in rendered


def test_bad_input_and_missing_logprobs_are_clear_errors() -> None:
    flare, _, _ = engine(script())
    with pytest.raises(InputError, match="empty"):
        flare.answer("   ")
    with pytest.raises(InputError, match="characters long"):
        flare.answer("x" * 5000)
    blind = Flare(ScriptedLM([], supports_logprobs=False), MemoryRetriever(DOCS), template=BARE)
    for trigger in ("min", "mean", "dynamic", "content"):  # FLARE direct's token rules
        with pytest.raises(ModelError, match=f"no token probabilities, which trigger={trigger} needs") as info:
            blind.answer("Why?", settings=Settings(trigger=trigger))
        assert "--trigger support" in str(info.value) and "\n" not in str(info.value)
    assert blind.answer("Why?").stop_reason  # the default evidence trigger needs no probabilities
    ok = Flare(script(), MemoryRetriever(DOCS), Settings(method="single"), template=BARE)
    assert ok.answer("Why did the founder of Versace die?").sentences


def test_first_piece_cuts_tokens_at_the_sentence_end() -> None:
    toks = (TokenLogprob(" He", -0.1), TokenLogprob(" left.", -0.2), TokenLogprob(" Then", -3.0))
    piece = first_piece(Completion(" He left. Then", toks, "sentence"))
    assert piece.text == "He left." and [t.text for t in piece.tokens] == [" He", " left."]
    assert not piece.model_done
    done = first_piece(Completion(" He left.", toks[:2], "stop"))
    assert done.model_done


def test_trace_records_every_step_and_totals() -> None:
    flare, tracer, _ = engine(script(), judge_end=False)  # no scoring call for the end: 4 LM calls
    answer = flare.answer("Why did the founder of Versace die?")
    t = tracer.traces[0].to_dict()
    assert t["version"] == "flare.trace/1" and t["trace_id"] == answer.trace_id
    assert t["retrievals"] == 2 and t["lm_calls"] == answer.lm_calls == 4
    step = t["steps"][1]
    assert set(step["timings"]) >= {"draft", "retrieve", "regenerate"}
    assert step["draft_tokens"][0][0] == " He" and step["lm_tokens_evaluated"] > 0
    assert all(r["text"] is None for s in t["steps"] for r in s["retrieved"])


def test_trace_records_passage_text_only_when_asked() -> None:
    tracer = MemoryTracer(record_content=True)
    Flare(script(), MemoryRetriever(DOCS), template=BARE, tracer=tracer).answer(
        "Why did the founder of Versace die?"
    )
    assert tracer.traces[0].steps[0].retrieved[0].text == DOCS[0].text


def test_passage_helper_is_frozen() -> None:
    with pytest.raises(AttributeError):
        Passage("a", "b").id = "c"  # type: ignore[misc]


def test_a_draft_of_only_function_words_searches_with_the_question() -> None:
    lm = script(draft=" He is a pioneer in the field.", low={"pioneer": 0.05, "field": 0.1})
    flare, tracer, _ = engine(lm)
    flare.answer("Why did the founder of Versace die?")
    assert tracer.traces[0].steps[1].queries == ["Why did the founder of Versace die?"]


def test_a_draft_with_one_content_word_adds_it_to_the_question() -> None:
    lm = script(draft=" He was shot in Rome.", low={"He": 0.1, "Rome": 0.1})
    flare, tracer, _ = engine(lm)
    flare.answer("Why did the founder of Versace die?")
    assert tracer.traces[0].steps[1].queries == ["Why did the founder of Versace die? was shot in"]
