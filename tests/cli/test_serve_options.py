"""``flare serve``'s trace store and parallelism options fail at start-up with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_cli_errors import flare, one_line_error


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("serve")
    corpus = root / "c.jsonl"
    passage = {"id": "a", "title": "A", "text": "Alpha is a letter.", "meta": {"acl": ["g"]}}
    corpus.write_text(json.dumps(passage) + "\n", encoding="utf-8")
    assert flare("index", str(corpus), "--index", str(root / "idx"), "--quiet").returncode == 0
    keys = root / "keys.toml"
    keys.write_text('[[keys]]\nkey = "sk-test-0123456789abcdef"\nprincipal = "p"\ngroups = ["g"]\n', encoding="utf-8")
    return root / "idx", keys


def _serve(setup: tuple[Path, Path], *args: str) -> list[str]:
    index, keys = setup
    return ["serve", "--index", str(index), "--keys", str(keys), "--port", "0", *args]


def test_bad_trace_stores(setup: tuple[Path, Path], tmp_path: Path) -> None:
    one_line_error(flare(*_serve(setup, "--trace-store", "mysql://db/flare")), "unknown trace store")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    one_line_error(flare(*_serve(setup, "--trace-store", f"sqlite:{blocker}/t.sqlite")), "cannot open the trace store")
    url = f"postgresql://flare:s3cret@/flare?host={tmp_path}&connect_timeout=2"
    out = flare(*_serve(setup, "--trace-store", url))
    one_line_error(out, "cannot use the trace store")
    assert "s3cret" not in out.stderr


def test_bad_parallel_settings(setup: tuple[Path, Path]) -> None:
    out = flare(*_serve(setup, "--max-parallel", "0"))
    assert out.returncode == 2 and "--max-parallel" in out.stderr
    one_line_error(flare(*_serve(setup, "--model", "xllamacpp:/nowhere/m.gguf")), "model file not found")
