"""The evaluation harness: datasets, resumable results, failures counted as wrong, report and CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flare.errors import InputError
from flare.evaluate.datasets import load_dataset
from flare.evaluate.harness import RESULTS_FILE, Job, Task, read_results, run_eval
from flare.evaluate.methods import expand, parse_method
from flare.evaluate.prompts import load_prompt_set, prompt_set_for
from flare.evaluate.report import summarise, write_report
from flare.testing.memory import MemoryRetriever
from flare.testing.scripted import ScriptedLM
from flare.types import Hit
from tests.evaluate.support import DOCS, QUESTION, ContinuationLM


def make_dataset(root: Path, n: int = 3) -> Path:
    folder = root / "toy"
    folder.mkdir()
    rows = [{"id": f"q{i}", "question": QUESTION if i != 1 else f"{QUESTION} (variant {i})",
             "answers": ["Emma Jane Whelan", "Emma Whelan"], "type": None, "supporting_ids": ["d1", "d2"]}
            for i in range(n)]
    (folder / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": p.id, "title": p.title, "text": p.text}) + "\n" for p in DOCS))
    return folder


def job(root: Path, retriever: Any = None) -> Job:
    ds = load_dataset(make_dataset(root))
    return Job(ds.name, "short", ds.select(), retriever or MemoryRetriever(DOCS))


def test_load_dataset_select_and_cached_index(tmp_path: Path) -> None:
    ds = load_dataset(make_dataset(tmp_path, n=5))
    assert [e.id for e in ds.select(limit=2, offset=1)] == ["q1", "q2"]
    assert [e.id for e in ds.select(offset=4)] == ["q4"]
    with pytest.raises(InputError, match=r"--offset 5 is past the last question: .* has 5"):
        ds.select(offset=5)  # it would select nothing: a run that answers no question
    shuffled = [e.id for e in ds.select(seed=3)]
    assert sorted(shuffled) == [f"q{i}" for i in range(5)] and shuffled == [e.id for e in ds.select(seed=3)]
    r = ds.retriever(tmp_path / "cache", progress=False)
    assert r.search("Hitchcock mother Whelan", k=1)[0].passage.id == "d2"
    built = list((tmp_path / "cache").iterdir())
    ds.retriever(tmp_path / "cache", progress=False)  # reused, not rebuilt
    assert list((tmp_path / "cache").iterdir()) == built
    with pytest.raises(InputError):
        load_dataset(tmp_path / "missing")


class Interrupt(Exception):
    pass


def test_resume_after_a_kill_redoes_nothing(tmp_path: Path) -> None:
    j, specs, out = job(tmp_path), expand(("none", "flare"), (), ()), tmp_path / "out"
    seen: list[str] = []

    def kill_after_four(rec: dict[str, Any]) -> None:
        seen.append(rec["id"])
        if len(seen) == 4:
            raise Interrupt  # stands for Ctrl-C / a crash right after the 4th answer was written

    with pytest.raises(Interrupt):
        run_eval([j], specs, ContinuationLM(), out, on_done=kill_after_four, progress=False)
    assert len(read_results(out / RESULTS_FILE)) == 4
    lm = ContinuationLM()
    assert run_eval([j], specs, lm, out, progress=False) == 2  # only the 2 unfinished answers
    records = read_results(out / RESULTS_FILE)
    assert len(records) == 6 and len((out / RESULTS_FILE).read_text().splitlines()) == 6
    assert run_eval([j], specs, ContinuationLM(), out, progress=False) == 0
    assert all(r["scores"]["em"] == 1.0 for r in records)


class FlakyRetriever(MemoryRetriever):
    def search(self, query: str, *, k: int, filters: Any = None) -> list[Hit]:
        if "variant" in query:
            raise RuntimeError("index went away")
        return super().search(query, k=k, filters=filters)


def test_failures_are_recorded_and_count_as_wrong(tmp_path: Path) -> None:
    j, out = job(tmp_path, FlakyRetriever(DOCS)), tmp_path / "out"
    run_eval([j], [parse_method("single")], ContinuationLM(), out, progress=False)
    records = read_results(out / RESULTS_FILE)
    failed = [r for r in records if r["error"]]
    assert len(records) == 3 and [r["id"] for r in failed] == ["q1"]
    assert "index went away" in failed[0]["error"] and failed[0]["scores"]["quality"] == 0.0
    row = summarise(records)[0]
    assert row["n"] == 3 and row["failed"] == 1 and row["quality"] == pytest.approx(2 / 3)
    # A rerun keeps the failure (it is finished, and wrong) unless asked to retry it.
    assert run_eval([j], [parse_method("single")], ContinuationLM(), out, progress=False) == 0
    assert run_eval([j], [parse_method("single")], ContinuationLM(), out, progress=False, retry_failed=True) == 1


def test_report_table_and_plots(tmp_path: Path) -> None:
    j, out = job(tmp_path), tmp_path / "out"
    specs = expand(("none", "single"), (), ("theta=0,1", "beta=0,0.6"))
    run_eval([j], specs, ContinuationLM(), out, progress=False)
    files = write_report(read_results(out / RESULTS_FILE), out)
    names = {p.name for p in files}
    assert {"report.md", "quality_vs_retrieval.png", "theta_sweep.png", "beta_sweep.png", "position.png"} <= names
    md = (out / "report.md").read_text()
    assert "| none | 3 | 0 | 1.000 |" in md and "retrieval rate" in md and "p95 s" in md


def test_eval_command_end_to_end_with_a_registered_fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flare.cli.eval_cmd import eval_command
    from flare.lm import registry

    monkeypatch.setitem(registry._FACTORIES, "continuation", lambda rest, **kw: ContinuationLM())
    folder = make_dataset(tmp_path)
    args = ["--dataset", str(folder), "--method", "single", "--method", "previous-sentence", "--limit", "2",
            "--model", "continuation", "--out", str(tmp_path / "out"), "--index-cache", str(tmp_path / "idx"),
            "--no-progress", "--set", "max_sentences=4"]
    result = CliRunner().invoke(eval_command, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert len(read_results(tmp_path / "out" / RESULTS_FILE)) == 4
    assert (tmp_path / "out" / "report.md").exists() and (tmp_path / "out" / "quality_vs_retrieval.png").exists()
    assert "--method single" in (tmp_path / "out" / "commands.txt").read_text()


def test_answers_without_the_cue_are_forced_the_same_way_for_every_method(tmp_path: Path) -> None:
    """A one-sentence answer with no "So the answer is" gets the cue completed, with no documents."""
    lm = ScriptedLM([
        (lambda p: p.endswith("So the answer is"), ScriptedLM.sentence(" Emma Jane Whelan.")),
        ("Question:", ScriptedLM.sentence(" Hitchcock's mother was Emma Jane Whelan.")),
    ])
    j, out = job(tmp_path), tmp_path / "out"
    run_eval([j], expand(("none", "single"), (), ()), lm, out, progress=False)
    records = read_results(out / RESULTS_FILE)
    assert len(records) == 6 and not [r for r in records if r["error"]]
    for r in records:
        assert r["prediction"] == "Hitchcock's mother was Emma Jane Whelan."
        assert r["forced"] == " Emma Jane Whelan." and r["extracted"] == "Emma Jane Whelan"
        assert r["scores"]["em"] == 1.0 and r["scores"]["answer_cue"] == 0.0  # the method did not write the cue
        assert r["lm_calls"] == 1 and r["forced_seconds"] >= 0
    forcing = [p for p in lm.calls if p.endswith("So the answer is")]
    assert len(forcing) == 6 and not any("Rebecca is a 1940 film" in p for p in forcing)  # no documents
    assert any("Rebecca is a 1940 film" in p for p in lm.calls)  # which single's own prompts did hold
    # Without forcing the whole sentence is compared: EM fails, F1 gives partial credit.
    out2 = tmp_path / "out2"
    run_eval([j], [parse_method("none")], lm, out2, progress=False, force=False)
    plain = read_results(out2 / RESULTS_FILE)
    assert all(r["forced"] is None and r["scores"]["em"] == 0.0 and 0 < r["scores"]["f1"] < 1 for r in plain)


def test_answers_with_the_cue_are_not_forced(tmp_path: Path) -> None:
    j, out = job(tmp_path), tmp_path / "out"
    run_eval([j], [parse_method("single")], ContinuationLM(), out, progress=False)
    assert all(r["forced"] is None and r["forced_seconds"] == 0 for r in read_results(out / RESULTS_FILE))


@pytest.mark.parametrize(("task", "prompt_set"), [("long", "asqa"), ("short", "multihop")])
def test_a_dataset_not_named_in_the_table_is_prompted_for_its_task(tmp_path: Path, task: Task, prompt_set: str) -> None:
    # A second fictional world ("world-s1") writes paragraphs like "world": the paragraph
    # exemplars, not the multi-hop chain of thought ending "So the answer is".
    lm = ScriptedLM([("Question:", ScriptedLM.sentence(" Hitchcock's mother was Emma Jane Whelan."))])
    ds = load_dataset(make_dataset(tmp_path))
    run_eval([Job("world-s1", task, ds.select(limit=1), MemoryRetriever(DOCS))], [parse_method("single")], lm,
             tmp_path / "out", progress=False, force=False)  # fmt: skip
    (prompt,) = lm.calls
    for name in ("asqa", "multihop"):
        assert (load_prompt_set(name).exemplars[0].question in prompt) == (name == prompt_set)
    assert prompt_set_for("world-s1", task) == prompt_set and prompt_set_for("asqa", "short") == "asqa"
