"""`flare index` + `flare ask` in Chinese, end to end, with the default model (Qwen2.5-1.5B) and real filters.

The corpus is made up, and without the filters each excluded passage would be among the k=3
passages put in the prompt (checked below), so the test can only pass if year and acl filters hold
in every search; and the answer must come from the allowed passage: in Chinese, split at Chinese
sentence ends, cited.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flare.engine.sentences import CUT_MARK
from flare.evaluate.facts import fact_in
from flare.text import language_of, split_sentences

pytestmark = pytest.mark.model

CORPUS = [
    {"id": "trip-2026", "title": "差旅-2026-04 境内差旅报销",
     "text": "北风实验室2026年的差旅报销规定：出差结束后30个自然日内提交票据，审批通过后5个工作日内付款。",
     "meta": {"year": 2026, "acl": ["staff"]}},
    {"id": "trip-2025", "title": "差旅-2025-02 境内差旅报销（已废止）",
     "text": "北风实验室2025年的差旅报销规定：出差结束后60个自然日内提交票据，审批通过后15个工作日内付款。",
     "meta": {"year": 2025, "acl": ["staff"]}},
    {"id": "trip-finance", "title": "差旅-2026-04 财务内部说明",
     "text": "北风实验室2026年的差旅报销：财务内部掌握的差旅预算为九百万元，审批通过后多久付款由财务总监蒋默决定。",
     "meta": {"year": 2026, "acl": ["finance"]}},
    {"id": "about", "title": "About Northwind Labs",
     "text": "Northwind Labs was founded in 2011 in Tromsø by the marine biologist Ingrid Solberg.",
     "meta": {"year": 2026, "acl": ["staff"]}},
]
QUESTION = "北风实验室2026年的差旅报销，审批通过后多久付款？票据要在多久内提交？"
ALLOWED = {"trip-2026", "about"}


def flare(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flare", *args], capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("zh")
    corpus = root / "beifeng.jsonl"
    corpus.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in CORPUS), encoding="utf-8")
    out = flare("index", str(corpus), "--index", str(root / "idx"), "--quiet")
    assert out.returncode == 0, out.stderr
    return root / "idx"


def test_a_chinese_question_gets_a_cited_chinese_answer_from_within_its_filters(index: Path, tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    out = flare("ask", QUESTION, "--index", str(index), "--filter", "year=2026", "--filter", "acl=staff",
                "--json", "--trace", str(trace), "--trace-content", "--max-sentences", "3", "--threads", "1")
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    texts = [s["text"] for s in answer["sentences"]]
    assert texts and language_of(answer["answer"]) == "zh"
    # Split at Chinese sentence ends: each sentence is one sentence, ending with its mark.
    for text in texts:
        assert split_sentences(text) == [text] and text[-1] in "。！？" + CUT_MARK, texts
    assert split_sentences(answer["answer"]) == texts
    assert fact_in("5个工作日", answer["answer"]), answer["answer"]  # the 2026 rule, not 2025's 15
    by_n = {s["n"]: s["id"] for s in answer["sources"]}
    cited = [by_n[n] for s in answer["sentences"] for n in s["citations"]]
    assert cited and set(cited) <= ALLOWED
    # Nothing outside the filters anywhere: answer, rendering, sources, trace (with passage text).
    record = json.loads(trace.read_text(encoding="utf-8").splitlines()[0])
    retrieved = {r["id"] for step in record["steps"] for r in step["retrieved"]}
    assert retrieved and retrieved <= ALLOWED
    everything = out.stdout + out.stderr + trace.read_text(encoding="utf-8")
    for hidden in ("trip-2025", "trip-finance", "九百万", "蒋默", "15个工作日", "60个自然日"):
        assert hidden not in everything, hidden


def test_without_the_filters_the_excluded_passages_would_reach_the_prompt(index: Path) -> None:
    from flare.retrieve.filters import Filters
    from flare.retrieve.tantivy_index import TantivyRetriever

    retriever = TantivyRetriever(index)
    assert {"trip-2025", "trip-finance"} <= {h.passage.id for h in retriever.search(QUESTION, k=3)}
    staff_2026 = Filters.parse(["year=2026", "acl=staff"])
    assert {h.passage.id for h in retriever.search(QUESTION, k=3, filters=staff_2026)} <= ALLOWED
