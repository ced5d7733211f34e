"""A policy registered from outside the package runs through ``flare ask`` and ``flare eval``.

The policy lives here, in the test module, and registers through the same
:func:`~flare.engine.methods.register_policy` as the built-ins; the CLI then accepts it by name
with the real SmolLM2 model and a real BM25 index on disk.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from flare.cli.main import cli
from flare.engine.events import Searching
from flare.engine.methods import register_policy, unregister_policy
from flare.engine.step import Commit, StepContext, StepGen
from flare.evaluate.harness import RESULTS_FILE, read_results
from tests.evaluate.test_harness import make_dataset

NAME = "question_every"


class QuestionEvery:
    """Retrieve with the question itself before every sentence (a deliberately simple policy)."""

    name = NAME
    needs_logprobs = False

    def step(self, ctx: StepContext) -> StepGen:
        ctx.record.kind = NAME
        if ctx.retrievals_left < 1:
            return ctx.capped(ctx.generate([], "generate"), "max_retrievals")
        yield Searching(ctx.index, 1)
        docs = [h.passage for h in ctx.search([ctx.run.question])]
        ctx.record.decision = "retrieve"
        return Commit(ctx.generate(docs, "generate"), docs, retrieved=True, grounded=bool(docs))


@pytest.fixture
def policy() -> Iterator[str]:
    register_policy(NAME, lambda settings: QuestionEvery())
    yield NAME
    unregister_policy(NAME)


def test_an_unregistered_method_is_refused_on_the_command_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["ask", "q?", "--index", str(tmp_path), "--method", NAME])
    assert result.exit_code == 2
    assert f"method '{NAME}' is not available" in result.output and "choose one of: decompose" in result.output


@pytest.mark.model
def test_flare_ask_runs_a_registered_policy(policy: str, tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "lh", "title": "Quillmere lighthouse",
                                  "text": "The Quillmere lighthouse was built in 1847 by Ada Pemberton."}) + "\n")
    runner = CliRunner()
    built = runner.invoke(cli, ["index", str(corpus), "--index", str(tmp_path / "idx"), "--quiet"])
    assert built.exit_code == 0, built.output
    trace = tmp_path / "t.jsonl"
    result = runner.invoke(cli, [
        "ask", "When was the Quillmere lighthouse built?", "--index", str(tmp_path / "idx"), "--method", policy,
        "--model", "smollm2", "--threads", "1", "--max-sentences", "2", "--json", "--trace", str(trace),
    ], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    record = json.loads(trace.read_text().splitlines()[0])
    assert record["method"] == policy
    written = [s for s in record["steps"] if s["sentence"]]
    assert written and all(s["kind"] == policy and s["queries"] == [record["question"]] for s in written)
    assert answer["retrievals"] == len([s for s in record["steps"] if s["queries"]]) >= len(written)


@pytest.mark.model
def test_flare_eval_runs_a_registered_policy(policy: str, tmp_path: Path) -> None:
    folder = make_dataset(tmp_path, n=1)
    out = tmp_path / "out"
    args = ["eval", "--dataset", str(folder), "--method", policy.replace("_", "-"), "--method", "none",
            "--model", "smollm2", "--threads", "1", "--set", "max_output_tokens=24", "--set", "max_sentences=2",
            "--out", str(out), "--index-cache", str(tmp_path / "idx"), "--no-progress", "--no-force-answer"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    records = {r["method"]: r for r in read_results(out / RESULTS_FILE)}
    assert set(records) == {"question-every", "none"} and not [r for r in records.values() if r["error"]]
    mine = records["question-every"]
    assert mine["settings"]["method"] == policy and mine["retrievals"] >= 1
    assert {s["kind"] for s in mine["trace"]["steps"]} == {policy}
    assert records["none"]["retrievals"] == 0
    assert "question-every" in (out / "report.md").read_text()
