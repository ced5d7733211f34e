"""Metrics against hand-worked examples (E2)."""

from __future__ import annotations

import math

import pytest

from flare.evaluate.datasets import Example
from flare.evaluate.harness import failed_scores, score, task_of
from flare.evaluate.metrics import (
    exact_match,
    extract_answer,
    gold_recall,
    lcs_length,
    normalize,
    percentile,
    rouge_l,
    short_answer_em,
    token_scores,
    yes_no,
)


def test_normalize_drops_case_punctuation_articles_and_extra_spaces() -> None:
    assert normalize("  The  Eiffel-Tower, in   PARIS! ") == "eiffeltower in paris"
    assert normalize("An apple a day") == "apple day"
    assert normalize("Theatre") == "theatre"  # "the" inside a word stays


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Vertigo was by Hitchcock. So the answer is Alfred Hitchcock.", ("Alfred Hitchcock", True)),
        ("So the answer is: yes. Extra words.", ("yes", True)),
        ("so the answer is A. So the answer is B.", ("B", True)),  # the last cue wins
        ("So the answer is 5.5 metres.", ("5.5 metres", True)),
        # An initial or an abbreviation is not the answer's end (round 17's HotpotQA answers).
        ("The Visit is by him. So the answer is M. Night Shyamalan.", ("M. Night Shyamalan", True)),
        (
            "So the answer is Check It Out! with Dr. Steve Brule. It aired in 2010.",
            ("Check It Out! with Dr. Steve Brule", True),
        ),
        ("So the answer is Washington, D.C.", ("Washington, D.C", True)),
        ("So the answer is J. R. R. Tolkien. He wrote it.", ("J. R. R. Tolkien", True)),
        ("So the answer is no. Wilderness was directed by William Clements.", ("no", True)),
        ("No cue here.", ("No cue here.", False)),
    ],
)
def test_extract_answer(text: str, expected: tuple[str, bool]) -> None:
    assert extract_answer(text) == expected


def test_exact_match_takes_the_best_alias() -> None:
    golds = ["Detroit", "Detroit, Michigan", "Motor City"]
    assert exact_match("the Motor City.", golds) == 1.0
    assert exact_match("detroit michigan", golds) == 1.0
    assert exact_match("Michigan", golds) == 0.0


def test_token_scores_hand_worked() -> None:
    # pred "emma jane whelan hitchcock" vs gold "emma jane whelan": 3 common, P=3/4, R=3/3, F1=6/7.
    s = token_scores("Emma Jane Whelan Hitchcock", ["Emma Jane Whelan", "Whelan"])
    assert (s.precision, s.recall) == (0.75, 1.0)
    assert s.f1 == pytest.approx(6 / 7)
    # The alias with the best F1 is kept: "Whelan" alone would give P=1/4, R=1.
    assert token_scores("nothing shared", ["Emma"]).f1 == 0.0


def test_yes_no() -> None:
    assert yes_no(extract_answer("Mozart came later. So the answer is no.")[0]) == "no"
    assert yes_no("Yes, it is") == "yes"
    assert yes_no("Maybe") is None


def test_rouge_l_by_hand() -> None:
    assert lcs_length(["a", "b", "c", "d"], ["a", "c", "d", "e"]) == 3
    # pred 4 words, ref 4 words, LCS 3: P=R=3/4, F=0.75; the best reference counts.
    assert rouge_l("A b c d", ["x y", "a c d e"]) == pytest.approx(0.75)
    assert rouge_l("", ["a"]) == 0.0


def test_asqa_short_answer_em() -> None:
    pairs = [("men?", ("Ali Daei", "Daei")), ("women?", ("Christine Sinclair",)), ("all time?", ("Josef Bican",))]
    text = "Ali Daei holds the men's record; Christine Sinclair the women's."
    assert short_answer_em(text, pairs) == pytest.approx(2 / 3)
    assert short_answer_em("Daeis", [("q", ("Daei",))]) == 0.0  # whole words only


def test_gold_recall_and_percentiles() -> None:
    assert gold_recall(["a", "b"], ["b", "c", "b"]) == 0.5
    assert gold_recall([], ["a"]) is None
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([10.0], 95) == 10.0
    assert math.isnan(percentile([], 50))


def test_scores_per_task_and_failures_count_as_wrong() -> None:
    ex = Example("1", "q", ("Detroit", "Motor City"))
    s = score("short", ex, "He died there. So the answer is Motor City.")
    assert s["em"] == 1.0 and s["quality"] == 1.0 and s["answer_cue"] == 1.0
    yn = Example("2", "q", ("no",))
    assert score("yesno", yn, "So the answer is no.")["accuracy"] == 1.0
    assert score("yesno", yn, "So the answer is yes.")["quality"] == 0.0
    assert all(v == 0.0 for v in failed_scores("short").values())
    assert task_of("strategyqa", []) == "yesno" and task_of("2wikimultihopqa", [ex]) == "short"
    assert task_of("custom", [Example("3", "q", ("long",), qa_pairs=(("q", ("a",)),))]) == "long"
