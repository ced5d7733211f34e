"""The paired comparison in the report, against hand-worked figures."""

from __future__ import annotations

import math
from typing import Any

import pytest

from flare.evaluate.report import bootstrap_interval, later_rate, markdown, paired, sign_test, summarise


def rec(method: str, qid: str, quality: float, dataset: str = "d") -> dict[str, Any]:
    return {"dataset": dataset, "method": method, "id": qid, "task": "yesno", "error": None,
            "scores": {"quality": quality, "accuracy": quality, "answer_cue": 1.0}, "sentences": 1,
            "retrieved_sentences": 0, "retrievals": 0, "lm_calls": 1, "seconds": 1.0, "gold_recall": None,
            "settings": {"theta": 0.8, "beta": 0.4, "method": method, "query": "implicit", "trigger": "min"}}


def test_sign_test_by_hand() -> None:
    assert sign_test(0, 0) == 1.0
    assert sign_test(5, 0) == pytest.approx(2 / 32)  # 2 × P(X ≤ 0), X ~ Bin(5, ½)
    assert sign_test(1, 3) == pytest.approx(2 * 5 / 16)  # 2 × (1 + 4) / 16
    assert sign_test(10, 10) == 1.0


def test_bootstrap_interval_of_constant_and_mixed_differences() -> None:
    assert bootstrap_interval([1.0, 1.0, 1.0]) == (1.0, 1.0)
    low, high = bootstrap_interval([1.0, -1.0] * 20)
    assert low < 0 < high and bootstrap_interval([1.0, -1.0] * 20) == (low, high)  # seeded


def test_paired_counts_only_common_questions_and_the_table_shows_them() -> None:
    records = [rec("single", "q1", 0), rec("single", "q2", 1), rec("single", "q3", 0),
               rec("flare", "q1", 1), rec("flare", "q2", 1), rec("flare", "q3", 1), rec("flare", "q4", 1),
               rec("none", "q1", 0, dataset="other")]
    (p,) = paired(records, "d")
    assert (p.method, p.n, p.wins, p.losses) == ("flare", 3, 2, 0)  # q4 has no single answer
    assert p.delta == pytest.approx(2 / 3) and p.p_sign == pytest.approx(0.5)
    assert paired(records, "other") == []  # no reference method there
    md = markdown(summarise(records), records=records)
    assert "| flare | 3 | 2 | 0 | +0.667 |" in md


def test_retrieval_rate_after_the_first_sentence() -> None:
    a, b, c = rec("flare", "q1", 1), rec("flare", "q2", 0), rec("flare", "q3", 0)
    a["positions"] = [{"retrieved": True}, {"retrieved": False}, {"retrieved": True}]
    b["positions"] = [{"retrieved": True}, {"retrieved": False}]
    c["positions"] = [{"retrieved": True}]  # one sentence: nothing after the first
    assert later_rate([a, b, c]) == pytest.approx(1 / 3)
    assert math.isnan(later_rate([c]))
    assert summarise([a, b, c])[0]["later_rate"] == pytest.approx(1 / 3)
