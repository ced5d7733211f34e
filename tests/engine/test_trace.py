"""Traces are appended as one JSON line per answer and read back unchanged."""

from __future__ import annotations

import json
from pathlib import Path

from flare.config import Settings
from flare.engine.loop import Flare
from flare.testing.memory import MemoryRetriever
from flare.testing.scripted import ScriptedLM
from flare.trace.tracers import JsonlTracer, read_traces
from tests.engine.support import BARE, DOCS


def test_jsonl_tracer_appends_one_line_per_answer(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "trace.jsonl"
    lm = ScriptedLM([(lambda p: True, ScriptedLM.sentence(" 浮冰传感器测量海冰厚度。"))])
    engine = Flare(lm, MemoryRetriever(DOCS), Settings(method="none"), template=BARE, tracer=JsonlTracer(path))
    a1 = engine.answer("first?")
    a2 = engine.answer("second?")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    assert "浮冰" in lines[0]  # written as UTF-8, not \\u escapes
    traces = read_traces(path)
    assert [t["trace_id"] for t in traces] == [a1.trace_id, a2.trace_id]
    assert traces[0]["answer"] == "浮冰传感器测量海冰厚度。" and traces[0]["method"] == "none"
    assert json.loads(lines[1])["question"] == "second?"


def test_memory_retriever_applies_filters_before_scoring() -> None:
    from flare.retrieve.filters import Filters

    r = MemoryRetriever(DOCS)
    assert r.search("designer will company niece", k=3)[0].passage.id == "s1"
    public = r.search("designer will company niece", k=3, filters=Filters.any_of("acl", ["public"]))
    assert all(h.passage.id != "s1" for h in public)
    assert r.search("the of", k=3) == []
