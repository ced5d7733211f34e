"""``flare eval --shift-cache`` reaches the model factory, and a run with it completes.

The model is registered from outside the package (a factory that records its options and builds
the real SmolLM2 with them), as a user's own model spec would be.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flare.cli.main import cli
from flare.evaluate.harness import RESULTS_FILE, read_results
from flare.lm import registry
from flare.lm.base import LanguageModel
from flare.lm.llama import LlamaCppModel, default_model_path
from flare.lm.registry import register_model
from tests.evaluate.test_harness import make_dataset

SEEN: list[dict[str, Any]] = []


@pytest.fixture
def probe() -> Iterator[str]:
    def factory(rest: str, **options: Any) -> LanguageModel:
        SEEN.append(dict(options))
        options.setdefault("special_tokens", True)
        return LlamaCppModel(default_model_path(), **options)

    register_model("probe", factory)
    yield "probe:smollm2"
    registry._FACTORIES.pop("probe", None)
    SEEN.clear()


@pytest.mark.model
@pytest.mark.parametrize(("flag", "passed"), [(["--shift-cache"], True), (["--no-shift-cache"], False), ([], None)])
def test_eval_passes_shift_cache_to_the_model(flag: list[str], passed: bool | None, probe: str,
                                              tmp_path: Path) -> None:  # fmt: skip
    folder = make_dataset(tmp_path, n=1)
    out = tmp_path / "out"
    args = ["eval", "--dataset", str(folder), "--method", "flare", "--model", probe, "--threads", "1",
            "--set", "max_output_tokens=24", "--set", "max_sentences=2", "--out", str(out),
            "--index-cache", str(tmp_path / "idx"), "--no-progress", "--no-force-answer", *flag]  # fmt: skip
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert SEEN and SEEN[-1].get("shift_cache") is passed  # absent: the model's own default
    assert [r for r in read_results(out / RESULTS_FILE) if not r["error"]]
