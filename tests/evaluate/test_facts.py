"""Fact scoring (numbers in Chinese and English forms), the fact task of the harness, and the Chinese dev set."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pytest

from flare.errors import InputError
from flare.evaluate.datasets import load_dataset
from flare.evaluate.facts import fact_in, fact_recall, normalise, score_facts
from flare.evaluate.harness import Job, read_results, run_eval, task_of
from flare.evaluate.methods import expand
from flare.evaluate.report import markdown, summarise
from flare.testing.memory import MemoryRetriever
from flare.testing.scripted import ScriptedLM
from flare.types import Passage

ROOT = Path(__file__).resolve().parents[2]
QINGLAN = ROOT / "benchmarks" / "qinglan-zh"


@pytest.mark.parametrize(
    ("fact", "text"),
    [
        ("5个工作日", "审批通过后五个工作日内付款。"),
        ("5个工作日", "审批通过后 5 个工作日内付款。"),
        ("10个工作日", "十个工作日"),
        ("2026年", "二〇二六年起执行"),
        ("42,000元", "售价为42000元"),
        ("5万元", "超过50,000元的采购"),
        ("3,600万元", "分配3600万元"),
        ("1.2亿元", "预算为1.2亿元"),
        ("两周", "提前2周"),
        ("eleven", "customers in 11 countries"),
        ("55 degrees", "between -20 and 55 degrees Celsius"),
        ("IP68", "防护等级为ＩＰ６８"),
    ],
)
def test_the_same_fact_in_other_number_forms_is_found(fact: str, text: str) -> None:
    assert fact_in(fact, text)


@pytest.mark.parametrize(
    ("fact", "text"),
    [
        ("5个工作日", "审批通过后15个工作日内付款。"),
        ("-20", "QL-200 水质仪"),
        ("3天", "第13天"),
        ("1年", "一线城市"),
        ("", "anything"),
    ],
)
def test_a_different_number_is_not_the_fact(fact: str, text: str) -> None:
    assert not fact_in(fact, text)


def test_normalise_writes_numbers_as_values_and_drops_the_measure_word() -> None:
    assert normalise("三个 工作日") == "⟨3⟩工作日"
    assert normalise("2.5 公斤") == "⟨2.5⟩公斤"


def test_recall_stale_and_secret() -> None:
    extra = {"facts": [["600元"], ["450元"]], "stale": [["500元"]], "secret": [["32,000元"]]}
    s = score_facts("一线城市每晚不超过600元，以前是五百元。", extra)
    assert s["fact_recall"] == 0.5 and s["stale"] == 1.0 and s["secret"] == 0.0 and s["all_facts"] == 0.0
    assert score_facts("月薪最高三万二千元。", extra)["secret"] == 1.0
    assert fact_recall("anything", []) == 1.0


def test_a_permission_probe_has_no_recall_but_still_counts_secrets() -> None:
    probe = {"facts": [], "secret": [["3个高危漏洞"]]}
    assert score_facts("文档中没有给出答案。", probe)["quality"] is None
    assert score_facts("发现了三个高危漏洞。", probe)["secret"] == 1.0


# -- the harness on fact questions ------------------------------------------------------------------

DOCS = [
    Passage("t26", "2026年境内出差审批通过后5个工作日内付款。", "差旅-2026-04", {"year": 2026, "acl": ["staff"]}),
    Passage("t25", "2025年境内出差审批通过后15个工作日内付款。", "差旅-2025-02", {"year": 2025, "acl": ["staff"]}),
    Passage("pay", "2026年出差补贴的秘密数额为900元。", "薪酬", {"year": 2026, "acl": ["hr"]}),
]
QUESTION = "2026年境内出差审批通过后多久付款？"


def fact_dataset(root: Path, metadata: dict[str, dict[str, Any]] | None = None) -> Path:
    folder = root / "facts"
    folder.mkdir()
    rows = [
        {"id": "f1", "question": QUESTION, "answers": ["5个工作日"], "filters": ["year=2026", "acl=staff"],
         "facts": [["5个工作日"]], "stale": [["15个工作日"]], "secret": [], "split": "dev"},
        {"id": "f2", "question": "2026年出差补贴的秘密数额是多少？", "answers": ["-"], "filters": ["acl=staff"],
         "facts": [], "stale": [], "secret": [["900元"]], "split": "test"},
    ]
    (folder / "questions.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    meta = metadata or {p.id: dict(p.meta) for p in DOCS}
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"id": p.id, "title": p.title, "text": p.text, "meta": meta[p.id]}, ensure_ascii=False) + "\n"
        for p in DOCS))
    return folder


def scripted() -> ScriptedLM:
    return ScriptedLM([
        ("[1] 差旅-2026-04", ScriptedLM.sentence("审批通过后五个工作日内付款。")),
        (lambda p: True, ScriptedLM.sentence("审批通过后十五个工作日内付款。")),
    ])


def test_fact_questions_are_asked_under_their_filters_and_scored_by_facts(tmp_path: Path) -> None:
    ds = load_dataset(fact_dataset(tmp_path))
    assert task_of(ds.name, ds.examples) == "facts"
    retriever = MemoryRetriever(DOCS)
    job = Job(ds.name, "facts", ds.select(), retriever, metadata=ds.metadata())
    run_eval([job], expand(("none", "single"), (), ()), scripted(), tmp_path / "out", progress=False)
    recs = {(r["method"], r["id"]): r for r in read_results(tmp_path / "out" / "results.jsonl")}
    assert {str(f) for _, f in retriever.queries} == {"year=2026 AND acl=staff", "acl=staff"}
    single, none = recs[("single", "f1")], recs[("none", "f1")]
    assert single["scores"]["fact_recall"] == 1.0 and single["scores"]["leak"] == 0.0
    assert none["scores"]["fact_recall"] == 0.0 and none["scores"]["stale"] == 1.0
    assert recs[("single", "f2")]["scores"]["quality"] is None  # a probe: no recall to average
    assert recs[("single", "f2")]["retrieved_ids"] and "pay" not in recs[("single", "f2")]["retrieved_ids"]
    assert single["forced"] is None  # fact answers are never completed with "So the answer is"
    rows = summarise(list(recs.values()))
    assert {r["method"]: r["quality"] for r in rows} == {"none": 0.0, "single": 1.0}
    assert "fact recall" in markdown(rows, records=list(recs.values()))


def test_a_passage_outside_the_filters_by_the_corpus_file_is_a_leak(tmp_path: Path) -> None:
    # The index says t26 is for staff; the corpus file (the truth) says it is for hr only.
    meta = {p.id: dict(p.meta) for p in DOCS}
    meta["t26"] = {"year": 2026, "acl": ["hr"]}
    ds = load_dataset(fact_dataset(tmp_path, meta))
    job = Job(ds.name, "facts", ds.select(limit=1), MemoryRetriever(DOCS), metadata=ds.metadata())
    run_eval([job], expand(("single",), (), ()), scripted(), tmp_path / "out", progress=False)
    (rec,) = read_results(tmp_path / "out" / "results.jsonl")
    assert rec["scores"]["leak"] == 1.0 and rec["outside_filters"] == ["t26"]


def test_split_selects_questions_and_an_unknown_split_is_an_input_error(tmp_path: Path) -> None:
    ds = load_dataset(fact_dataset(tmp_path))
    assert [e.id for e in ds.select(split="dev")] == ["f1"]
    with pytest.raises(InputError, match="split"):
        ds.select(split="holdout")


# -- the Chinese development set --------------------------------------------------------------------


def test_the_shipped_chinese_dev_set_is_the_generator_output_and_its_ground_truth_checks() -> None:
    gen = runpy.run_path(str(ROOT / "benchmarks" / "qinglan_zh.py"))
    assert gen["check"](gen["DOCS"], gen["QUESTIONS"]) == []
    ds = load_dataset(QINGLAN)
    assert len(ds.examples) >= 60 and task_of(ds.name, ds.examples) == "facts"
    assert [e.question for e in ds.examples] == [q["question"] for q in gen["QUESTIONS"]]
    corpus = [json.loads(line) for line in (QINGLAN / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    assert corpus == gen["DOCS"]
    assert sum(1 for e in ds.examples if len(e.supporting_ids) > 1) >= 5
    assert sum(1 for e in ds.examples if e.extra["stale"]) >= 20
