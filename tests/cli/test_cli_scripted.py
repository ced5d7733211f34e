"""CLI happy paths with ``--model scripted:FILE`` over real indexes: fast, no model weights.

The script plays FLARE's whole story: the first sentence comes from the question's documents,
the second is drafted with an unsure word, searched with that word masked (under the request's
filters) and rewritten from what was found, then the model ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flare.cli.narrate import narrate
from flare.trace.schema import StepRecord, TraceRecord

CORPUS = [
    {"id": "lh-1", "title": "Quillmere lighthouse", "meta": {"acl": ["public"], "year": 1847},
     "text": "The Quillmere lighthouse was built in 1847 by the engineer Ada Pemberton."},
    {"id": "lh-2", "title": "Quillmere lamp", "meta": {"acl": ["public"], "year": 1902},
     "text": "The Quillmere lamp burned whale oil until 1902."},
    {"id": "secret-1", "title": "Quillmere lighthouse lamp", "meta": {"acl": ["board"], "year": 2026},
     "text": "Confidential: the Quillmere lighthouse lamp burned whale oil; it will be sold for 4.2 million crowns."},
]  # fmt: skip
ANSWER_SCRIPT = {"name": "quillmere", "rules": [
    {"regex": r"oil\.\s*$", "tokens": []},  # the answer is complete: the model ends
    {"match": "until 1902", "say": " Its lamp burned whale oil."},  # rewritten from lh-2
    {"regex": r"1847\.\s*$", "say": " Its lamp burned coal. Then", "low": {"coal": 0.1}},  # unsure draft
    {"match": "Search results", "say": " The Quillmere lighthouse was built in 1847. Its"},
    {"say": " It was built in 1850.", "low": {"1850": 0.1}},
]}  # fmt: skip
EVAL_SCRIPT = {"rules": [
    {"match": "Quillmere lighthouse built?", "say": " So the answer is 1847."},
    {"match": "Quillmere lamp burn?", "say": " So the answer is whale oil."},
    {"say": " So the answer is unknown."},
]}  # fmt: skip


def flare(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flare", *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("scripted")
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in CORPUS), encoding="utf-8")
    out = flare("index", str(root / "corpus.jsonl"), "--index", str(root / "idx"), "--quiet")
    assert out.returncode == 0, out.stderr
    write_json(root / "answer.json", ANSWER_SCRIPT)
    return root


def test_ask_retrieves_where_the_draft_is_unsure_and_cites_only_permitted_passages(root: Path) -> None:
    trace = root / "trace.jsonl"
    out = flare("ask", "When was the Quillmere lighthouse built?", "--index", str(root / "idx"), "-k", "1",
                "--filter", "acl=public", "--model", f"scripted:{root / 'answer.json'}", "--json",
                "--trace", str(trace))  # fmt: skip
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert answer["answer"] == "The Quillmere lighthouse was built in 1847. Its lamp burned whale oil."
    assert [s["id"] for s in answer["sources"]] == ["lh-1", "lh-2"] and answer["stop_reason"] == "end"
    steps = json.loads(trace.read_text(encoding="utf-8"))["steps"]
    assert steps[1]["draft"] == "Its lamp burned coal." and steps[1]["decision"] == "retrieve"
    # "coal" (p=0.1 < β) is masked out; "Its" points at the lighthouse the answer named: its name leads.
    # Then a hop through the name the draft's best document gives, with the words that document lacks.
    assert steps[1]["queries"] == ["Quillmere Its lamp burned", "Ada Pemberton lamp burned"]
    assert all(r["id"] != "secret-1" for s in steps for r in s["retrieved"])


def test_ask_text_output_and_narration(root: Path) -> None:
    out = flare("ask", "When was the Quillmere lighthouse built?", "--index", str(root / "idx"), "-k", "1",
                "--model", f"scripted:{root / 'answer.json'}", "-v")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("The Quillmere lighthouse was built in 1847[1]. Its lamp burned whale oil[2].")
    assert "unsure (p < 0.8): coal 0.10" in out.stderr


def test_filters_are_checked_before_the_model_is_loaded(root: Path) -> None:
    out = flare("ask", "q?", "--index", str(root / "idx"), "--filter", "colour=red",
                "--model", f"scripted:{root / 'no-such-script.json'}")  # fmt: skip
    assert out.returncode == 1 and "unknown filter field 'colour'" in out.stderr
    out = flare("ask", "q?", "--index", str(root / "idx"), "--model", f"scripted:{root / 'no-such-script.json'}")
    assert out.returncode == 1 and "scripted model file not found" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_eval_runs_methods_end_to_end(root: Path, tmp_path: Path) -> None:
    data = tmp_path / "quill"
    data.mkdir()
    (data / "corpus.jsonl").write_text((root / "corpus.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    questions = [{"id": "q1", "question": "When was the Quillmere lighthouse built?", "answers": ["1847"]},
                 {"id": "q2", "question": "What did the Quillmere lamp burn?", "answers": ["whale oil"]}]  # fmt: skip
    (data / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    script = write_json(tmp_path / "eval.json", EVAL_SCRIPT)
    out = flare("eval", "--dataset", str(data), "--method", "single", "--method", "flare", "--model",
                f"scripted:{script}", "--out", str(tmp_path / "out"), "--index-cache", str(tmp_path / "cache"),
                "--no-progress")  # fmt: skip
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert sorted((r["method"], r["id"]) for r in records) == [("flare", "q1"), ("flare", "q2"),
                                                               ("single", "q1"), ("single", "q2")]  # fmt: skip
    assert all(r["error"] is None and r["scores"]["em"] == 1.0 for r in records)
    assert "| single | 2 | 0 | 1.000 |" in (tmp_path / "out" / "report.md").read_text(encoding="utf-8")


def test_the_model_is_a_setting_from_the_environment_or_the_config_file(root: Path) -> None:
    """``model`` like every setting: FLARE_MODEL or ``model = ...`` in flare.toml; --model wins."""
    script = f"scripted:{root / 'answer.json'}"
    base = ["ask", "When was the Quillmere lighthouse built?", "--index", str(root / "idx"), "--json"]
    env_run = subprocess.run([sys.executable, "-m", "flare", *base], capture_output=True, text=True, timeout=300,
                             env={**os.environ, "FLARE_MODEL": script})  # fmt: skip
    assert env_run.returncode == 0, env_run.stderr
    assert "whale oil" in json.loads(env_run.stdout)["answer"]  # the script spoke, not a real model
    (root / "flare.toml").write_text(f'model = "{script}"\n', encoding="utf-8")
    try:
        from_file = flare(*base, cwd=root)
        assert from_file.returncode == 0, from_file.stderr
        assert json.loads(from_file.stdout)["answer"] == json.loads(env_run.stdout)["answer"]
        overridden = flare(*base, "--model", "nonexistent.gguf", cwd=root)  # the flag wins over the file
        assert overridden.returncode == 1 and "model file not found: nonexistent.gguf" in overridden.stderr
        bad = subprocess.run([sys.executable, "-m", "flare", *base], capture_output=True, text=True, timeout=300,
                             env={**os.environ, "FLARE_MODEL": "nosuch"}, cwd=root)  # fmt: skip
        assert bad.returncode == 1 and "unknown model 'nosuch'" in bad.stderr and "Traceback" not in bad.stderr
    finally:
        (root / "flare.toml").unlink()


def test_narration_shows_a_draft_dropped_before_the_names_search(capsys: pytest.CaptureFixture[str]) -> None:
    step = StepRecord(index=1, kind="draft", draft="Mara Ulvin died in Korsk.", decision="accept",
                      predraft="So the answer is Mara Ulvin.")  # fmt: skip
    narrate(TraceRecord(trace_id="t", question="q", method="flare", model="m", retriever="r", filters="",
                        settings={}, steps=[step]))  # fmt: skip
    err = capsys.readouterr().err
    assert "drafted before the names search, dropped: 'So the answer is Mara Ulvin.'" in err


def test_narration_says_which_names_were_already_read(capsys: pytest.CaptureFixture[str]) -> None:
    step = StepRecord(index=1, kind="draft", draft="Mara Ulvin died in Korsk.", decision="accept",
                      queries=["Mara Ulvin die"], known=["p1"], unread=["q2"])  # fmt: skip
    narrate(TraceRecord(trace_id="t", question="q", method="flare", model="m", retriever="r", filters="",
                        settings={}, steps=[step]))  # fmt: skip
    err = capsys.readouterr().err
    assert "already in the prompt, name not followed to other pages: p1" in err
    assert "not read (below found_floor): q2" in err
