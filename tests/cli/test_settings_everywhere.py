"""Every setting is reachable from the CLI, the config file and the environment, with one precedence.

The checks iterate over the settings table, so a field added to ``Settings`` is covered here
without editing this file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from flare.cli.ask_cmd import ask
from flare.cli.demo_cmd import demo
from flare.cli.eval_cmd import eval_command
from flare.cli.options import settings_from
from flare.cli.serve_cmd import serve
from flare.config import SettingInfo, Settings, setting_infos
from flare.config_file import load_settings


def other_value(info: SettingInfo) -> Any:
    """A valid value that differs from the default."""
    if info.name == "method":
        return "single"
    if info.name == "model":
        return "smollm2"
    if info.choices:
        return next(c for c in info.choices if c != info.default)
    if info.kind is bool:
        return not info.default
    if info.high is not None:
        return info.kind((info.default + info.high) / 2) if info.default < info.high else info.kind(info.low)
    return info.default + 1


def as_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def parse(command: click.Command, args: list[str]) -> dict[str, Any]:
    return dict(command.make_context(command.name or "", args).params)


@pytest.mark.parametrize("info", setting_infos(), ids=lambda i: i.name)
def test_each_setting_from_flag_file_and_environment(info: SettingInfo, tmp_path: Path) -> None:
    value = other_value(info)
    if info.kind is bool:
        flag_args = [info.flags[-1] if value else f"--no-{info.flags[-1][2:]}"]
    else:
        flag_args = [info.flags[-1], as_text(value)]
    for command, head in ((ask, ["q?", "--index", "i"]), (serve, ["--index", "i", "--keys", "k"]), (demo, [])):
        params = parse(command, [*head, *flag_args, "--config", str(tmp_path / "absent.toml")])
        params["config_path"] = None  # only the flags here: the file is tested below
        assert getattr(settings_from(params), info.name) == value, command.name
    if info.name != "method":  # flare eval takes methods as specs (--method flare:theta=0.4)
        params = parse(eval_command, ["--dataset", "d", "--out", "o", *flag_args])
        assert params[info.name] == value
    toml = json.dumps(value) if info.kind is not bool else as_text(value)
    (tmp_path / "flare.toml").write_text(f"{info.name} = {toml}\n", encoding="utf-8")
    assert getattr(load_settings(env={}, cwd=tmp_path), info.name) == value
    assert getattr(load_settings(env={info.env: as_text(value)}, cwd=tmp_path / "x"), info.name) == value


def test_flags_beat_environment_beat_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "flare.toml"
    cfg.write_text("theta = 0.3\nk = 2\nmax_sentences = 5\n", encoding="utf-8")
    monkeypatch.setenv("FLARE_K", "4")
    monkeypatch.setenv("FLARE_MAX_SENTENCES", "6")
    params = parse(ask, ["q?", "--index", "i", "--config", str(cfg), "--max-sentences", "7"])
    s = settings_from(params)
    assert (s.theta, s.k, s.max_sentences) == (0.3, 4, 7)
    assert s.beta == Settings().beta


def flare(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    src = str(Path(__file__).resolve().parents[2] / "src")
    full = {**os.environ, "PYTHONPATH": src, **(env or {})}
    return subprocess.run([sys.executable, "-m", "flare", *args], capture_output=True, text=True, cwd=cwd,
                          env=full, timeout=300)  # fmt: skip


def one_line_error(out: subprocess.CompletedProcess[str], needle: str) -> None:
    lines = [x for x in out.stderr.splitlines() if x.strip()]
    assert out.returncode == 1 and len(lines) == 1, out.stderr
    assert lines[0].startswith("flare: error: ") and "(hint: " in lines[0] and needle in lines[0], lines[0]


def test_bad_config_and_environment_fail_in_one_line_before_any_work(tmp_path: Path) -> None:
    (tmp_path / "flare.toml").write_text("thetta = 0.3\n", encoding="utf-8")
    one_line_error(flare("ask", "q?", "--index", "missing", cwd=tmp_path),
                   "flare.toml: unknown setting 'thetta' (hint: did you mean 'theta'?)")  # fmt: skip
    one_line_error(flare("eval", "--dataset", "missing", "--out", "o", cwd=tmp_path), "unknown setting 'thetta'")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    one_line_error(flare("ask", "q?", "--index", "missing", cwd=elsewhere, env={"FLARE_THETA": "2"}),
                   "environment FLARE_THETA: theta=2.0 is out of range")  # fmt: skip
    one_line_error(flare("serve", "--index", "missing", "--keys", "k", "--config", "nope.toml", cwd=elsewhere),
                   "config file not found: nope.toml")  # fmt: skip
    assert not (tmp_path / "o").exists() and not (elsewhere / "o").exists()


@pytest.mark.model
def test_flare_ask_uses_file_environment_and_flags(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "title": "Alpha", "text": "Alpha was founded in 1901."}) + "\n")
    assert flare("index", str(corpus), "--index", "idx", "--quiet", cwd=tmp_path).returncode == 0
    (tmp_path / "flare.toml").write_text('method = "single"\nk = 2\ntheta = 0.3\nmax_sentences = 2\n')
    out = flare("ask", "When was Alpha founded?", "--index", "idx", "--model", "smollm2", "--threads", "1",
                "--trace", "t.jsonl", "--max-sentences", "1", cwd=tmp_path, env={"FLARE_K": "1"})  # fmt: skip
    assert out.returncode == 0, out.stderr
    record = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])
    s = record["settings"]
    assert (s["method"], s["theta"], s["k"], s["max_sentences"]) == ("single", 0.3, 1, 1)
    assert record["method"] == "single" and len(record["steps"][0]["retrieved"]) == 1


def test_flare_eval_applies_file_and_environment_under_each_spec(tmp_path: Path) -> None:
    """The config file and FLARE_* reach every method of flare eval; a spec's own settings win."""
    from tests.evaluate.test_harness import make_dataset

    folder = make_dataset(tmp_path, n=1)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rules": [{"say": " Emma Jane Whelan was his mother. So the answer is Emma."}]}))
    (tmp_path / "flare.toml").write_text("k = 2\nmax_sentences = 3\ntheta = 0.3\n", encoding="utf-8")
    out = flare("eval", "--dataset", str(folder), "--method", "single", "--method", "flare:theta=0.6",
                "--model", f"scripted:{script}", "--out", "o", "--index-cache", "idx", "--no-progress",
                cwd=tmp_path, env={"FLARE_MAX_SENTENCES": "2"})  # fmt: skip
    assert out.returncode == 0, out.stderr
    records = {r["method"]: r for r in map(json.loads, (tmp_path / "o" / "results.jsonl").read_text().splitlines())}
    assert set(records) == {"single", "flare:theta=0.6"} and not [r for r in records.values() if r["error"]]
    for r in records.values():
        assert (r["settings"]["k"], r["settings"]["max_sentences"]) == (2, 2)
    assert records["single"]["settings"]["theta"] == 0.3 and records["flare:theta=0.6"]["settings"]["theta"] == 0.6
