"""``flare eval`` end to end with the real bundled SmolLM2: 2 questions, 2 methods, table and plots."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from flare.cli.eval_cmd import eval_command
from flare.evaluate.harness import RESULTS_FILE, read_results
from tests.evaluate.test_harness import make_dataset


@pytest.mark.model
def test_flare_eval_with_smollm2_writes_the_report(tmp_path: Path) -> None:
    folder = make_dataset(tmp_path, n=2)
    out = tmp_path / "out"
    # Short budgets keep this to a few LM calls per answer on a busy CPU.
    # Two methods that write the same first prompt: the second must not find it cached.
    args = ["--dataset", str(folder), "--method", "none", "--method", "single",
            "--method", "single:max_output_tokens=31", "--model", "smollm2",
            "--threads", "2", "-k", "2", "--set", "max_output_tokens=32", "--set", "max_sentences=2",
            "--out", str(out), "--index-cache", str(tmp_path / "idx"), "--no-progress"]
    result = CliRunner().invoke(eval_command, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    records = read_results(out / RESULTS_FILE)
    assert len(records) == 6 and not [r for r in records if r["error"]]
    assert all(r["trace"]["steps"] and r["lm_calls"] >= 1 for r in records)
    assert {r["retrievals"] for r in records if r["method"] == "none"} == {0}
    assert {r["retrievals"] for r in records if r["method"] == "single"} == {1}
    # Every answer starts from the prompt header alone (fair timing): the twin evaluates the
    # question's documents again instead of reusing what `single` left in the cache.
    first = {(r["method"], r["id"]): r["trace"]["steps"][0]["lm_tokens_evaluated"] for r in records}
    for qid in {r["id"] for r in records}:
        assert first[("single", qid)] == first[("single:max_output_tokens=31", qid)] > 40
    md = (out / "report.md").read_text()
    assert "| none | 2 | 0 |" in md and "| single | 2 | 0 |" in md
    assert (out / "quality_vs_retrieval.png").stat().st_size > 0 and (out / "position.png").exists()
