"""ALCE-style citation figures computed with the support checker, on hand-worked answers."""

from __future__ import annotations

import pytest

from flare.evaluate.citations import citation_scores
from flare.evaluate.report import markdown, paired, summarise
from flare.types import Answer, Citation, Sentence

POLICY = Citation(1, "p1", "Travel policy", "Travel expenses are reimbursed within ten working days.")
FOUNDER = Citation(2, "p2", "Northwind Labs", "Northwind Labs was founded in 1999 by Ingrid Solberg.")
LAPTOP = Citation(3, "p3", "Equipment", "Every employee receives a laptop, replaced after four years.")


def answer(*sentences: Sentence) -> Answer:
    return Answer("q", sentences, (POLICY, FOUNDER, LAPTOP), "end", "t")


def test_supported_sentences_with_needed_citations_score_one() -> None:
    a = answer(Sentence("Northwind Labs was founded in 1999.", True, (2,)),
               Sentence("Travel expenses are reimbursed within 10 working days.", True, (1,)))  # fmt: skip
    assert citation_scores(a) == {"citation_recall": 1.0, "citation_precision": 1.0, "unsupported": 0.0,
                                  "cited_unsupported": 0.0, "flagged": 0.0, "shown_unsupported": 0.0}  # fmt: skip


def test_recall_precision_and_the_unmarked_unsupported_share() -> None:
    a = answer(
        Sentence("Northwind Labs was founded in 1999.", True, (2, 3)),  # 3 is not needed
        Sentence("Travel expenses are reimbursed within 3 months.", True, (1,)),  # wrong number, unmarked
        Sentence("Ingrid Solberg lives in Oslo.", False, (), True, "unsupported", ("Oslo",)),  # uncited, marked
        Sentence("Yes.", False),  # no claims: not counted
        Sentence("The documents do not say where Ingrid Solberg was born.", False),  # nor this one
    )
    s = citation_scores(a)
    assert s["citation_recall"] == pytest.approx(1 / 3)
    assert s["unsupported"] == pytest.approx(2 / 3)
    assert s["cited_unsupported"] == pytest.approx(1 / 2)
    assert s["citation_precision"] == pytest.approx(1 / 3)  # of 3 citations only p2 is needed
    assert s["flagged"] == pytest.approx(1 / 5)
    assert s["shown_unsupported"] == pytest.approx(1 / 3)  # the 3-months sentence


def test_a_sentence_needing_two_citations_needs_both() -> None:
    text = "Northwind Labs was founded in 1999, and laptops are replaced after four years."
    s = citation_scores(answer(Sentence(text, True, (2, 3))))
    assert s["citation_recall"] == 1.0 and s["citation_precision"] == 1.0


def test_empty_answers_count_nothing() -> None:
    assert citation_scores(answer()) == dict.fromkeys(
        ("citation_recall", "citation_precision", "unsupported", "cited_unsupported", "flagged",
         "shown_unsupported"))  # fmt: skip


def _rec(method: str, qid: str, **scores: float | None) -> dict[str, object]:
    return {"dataset": "world", "method": method, "id": qid, "task": "long", "error": None, "sentences": 1,
            "retrieved_sentences": 1, "retrievals": 1, "lm_calls": 1, "seconds": 1.0, "positions": [],
            "gold_recall": None, "settings": {"theta": 0.8, "beta": 0.4, "method": "flare", "query": "implicit",
                                               "trigger": "min"},
            "scores": {"quality": 0.5, "str_em": 0.5, "rouge_l": 0.1, **scores}}  # fmt: skip


def test_the_report_shows_support_figures_and_pairs_any_metric() -> None:
    recs = [_rec("single", "a", unsupported=0.5, truth_cited_unsupported=0.4),
            _rec("single", "b", unsupported=0.0, truth_cited_unsupported=None),
            _rec("flare", "a", unsupported=0.0, truth_cited_unsupported=0.1),
            _rec("flare", "b", unsupported=0.5, truth_cited_unsupported=0.0)]  # fmt: skip
    rows = summarise(recs)
    assert rows[0]["support"]["unsupported"] == 0.25 and rows[0]["support"]["truth_cited_unsupported"] == 0.4
    text = markdown(rows, records=recs)
    assert "| method | unsupported | truth: cited unsupported |" in text  # columns with figures only
    [p] = paired(recs, "world", metric="truth_cited_unsupported")
    assert p.n == 1 and p.delta == pytest.approx(-0.3)  # question b has no figure for single
