"""The CLI's error paths: one line with a hint, a non-zero exit, nothing half-written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def flare(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flare", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli")
    corpus = root / "c.jsonl"
    corpus.write_text(
        json.dumps({"id": "a", "title": "A", "text": "Alpha is a letter.", "meta": {"year": 2026}}) + "\n",
        encoding="utf-8",
    )
    out = flare("index", str(corpus), "--index", str(root / "idx"), "--quiet")
    assert out.returncode == 0, out.stderr
    return root / "idx"


def one_line_error(out: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert out.returncode != 0
    lines = [x for x in out.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("flare: error: ") and "(hint: " in lines[0]
    for n in needles:
        assert n in lines[0]


def test_empty_question(index: Path) -> None:
    one_line_error(flare("ask", "  ", "--index", str(index)), "question is empty")


def test_missing_model_file(index: Path, tmp_path: Path) -> None:
    one_line_error(flare("ask", "q?", "--index", str(index), "--model", str(tmp_path / "no.gguf")), "not found")


def test_unknown_model_spec(index: Path) -> None:
    one_line_error(flare("ask", "q?", "--index", str(index), "--model", "gpt-17"), "unknown model")


def test_unknown_filter_field_and_malformed_filter(index: Path) -> None:
    one_line_error(flare("ask", "q?", "--index", str(index), "--filter", "colour=red"), "colour")
    one_line_error(flare("ask", "q?", "--index", str(index), "--filter", "year"), "cannot parse filter")


def test_missing_index(tmp_path: Path) -> None:
    one_line_error(flare("ask", "q?", "--index", str(tmp_path / "none")), "no index")


def test_unknown_option_values_are_usage_errors(index: Path) -> None:
    for args in (["--theta", "1.5"], ["--method", "magic"], ["--query", "loud"], ["-k", "0"]):
        out = flare("ask", "q?", "--index", str(index), *args)
        assert out.returncode == 2 and "Invalid value" in out.stderr, (args, out.stderr)


def test_bad_corpus_files_fail_and_keep_the_existing_index(index: Path, tmp_path: Path) -> None:
    before = sorted(p.name for p in index.iterdir())
    bad_jsonl = tmp_path / "bad.jsonl"
    bad_jsonl.write_text('{"id": "x", "text": "ok"}\n{not json\n', encoding="utf-8")
    one_line_error(flare("index", str(bad_jsonl), "--index", str(index)), "bad.jsonl:2: malformed JSON")
    binary = tmp_path / "docs"
    binary.mkdir()
    (binary / "blob.txt").write_bytes(b"\x00\xff\xfe binary \x00")
    one_line_error(flare("index", str(binary), "--index", str(index)))
    latin = tmp_path / "latin"
    latin.mkdir()
    (latin / "l.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    one_line_error(flare("index", str(latin), "--index", str(index)), "UTF-8")
    assert sorted(p.name for p in index.iterdir()) == before
    assert not [p for p in index.parent.iterdir() if p.name.startswith(".")]


def test_index_and_ask_take_backend_specs(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "text": "Alpha is a letter."}) + "\n", encoding="utf-8")
    out = flare("index", str(corpus), "--index", f"bm25:{tmp_path / 'ix'}", "--quiet")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "ix" / "flare-index.json").is_file()
    # An LM server that is down: a clear one-line error after the retries, not a traceback.
    down = flare("ask", "What is alpha?", "--index", f"bm25:{tmp_path / 'ix'}",
                 "--model", "openai:http://127.0.0.1:9/v1#none")
    one_line_error(down, "127.0.0.1:9")
    one_line_error(flare("ask", "q?", "--index", "nosuch:thing"))


def _damaged_copy(index: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "damaged"
    shutil.copytree(index, copy)
    store = next(p for p in copy.iterdir() if p.suffix == ".store")
    os.truncate(store, store.stat().st_size // 2)
    return copy


def test_a_damaged_index_is_one_line_for_ask_and_serve(index: Path, tmp_path: Path) -> None:
    damaged = _damaged_copy(index, tmp_path)
    one_line_error(flare("ask", "q?", "--index", str(damaged)), "damaged", "rebuild")
    keys = tmp_path / "keys.toml"
    keys.write_text('[[keys]]\nkey = "sk-test-0123456789abcdef"\nprincipal = "p"\ngroups = ["g"]\n', encoding="utf-8")
    served = flare("serve", "--index", str(damaged), "--keys", str(keys), "--port", "0")
    one_line_error(served, "damaged", "rebuild")  # refused before the server starts


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ('[[keys]]\nkey = "sk-test-0123456789abcdef"\nprincipal = "p"\ngroups = ["g"]\n', ("'p'", "'acl'")),
        ('acl_field = "year"\n[[keys]]\nkey = "sk-test-0123456789abcdef"\nprincipal = "p"\ngroups = ["g"]\n'
         'filters = ["colour=red"]\n', ("'p'", "'colour'")),
    ],
)
def test_a_key_file_that_does_not_fit_the_index_is_one_line(
    index: Path, tmp_path: Path, config: str, words: tuple[str, ...]
) -> None:
    keys = tmp_path / "keys.toml"
    keys.write_text(config, encoding="utf-8")
    out = flare("serve", "--index", str(index), "--keys", str(keys), "--port", "0")
    one_line_error(out, "key file", *words)
    assert "acl_field" in out.stderr  # the hint names the setting to fix


def test_the_question_is_checked_before_the_model(index: Path, tmp_path: Path) -> None:
    one_line_error(flare("ask", "  ", "--index", str(index), "--model", str(tmp_path / "no.gguf")),
                   "question is empty")  # fmt: skip


@pytest.mark.parametrize("expr", ["acl=" + "x" * 2_000, "acl=a\x01b", "acl=x" + " " * 63_000 + "y"])
def test_hostile_filters_are_one_line(index: Path, expr: str) -> None:
    out = flare("ask", "q?", "--index", str(index), "--filter", expr)
    one_line_error(out, "filter")
    assert len(out.stderr) < 400


def test_a_question_that_is_not_utf8_is_one_line(index: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "flare", "ask", b"Who \xff founded?", "--index", str(index)],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    one_line_error(out, "not valid Unicode")


def test_an_index_path_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "text": "Alpha is a letter."}) + "\n", encoding="utf-8")
    one_line_error(flare("index", str(corpus), "--index", str(corpus / "idx")), "cannot create", "writable")


def test_an_eval_offset_past_the_last_question_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    """Two questions, --offset 2: an error naming the count, before an index is built or a file written."""
    data = tmp_path / "two"
    data.mkdir()
    rows = [{"id": f"q{i}", "question": f"Who wrote {i}?", "answers": ["X"]} for i in range(2)]
    (data / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (data / "corpus.jsonl").write_text(json.dumps({"id": "a", "text": "X wrote it."}) + "\n", encoding="utf-8")
    out_dir, cache = tmp_path / "out", tmp_path / "idx"
    out = flare("eval", "--dataset", str(data), "--offset", "2", "--method", "none", "--model", "smollm2",
                "--out", str(out_dir), "--index-cache", str(cache), "--no-progress")  # fmt: skip
    one_line_error(out, "--offset 2 is past the last question", "has 2", "below 2")
    assert not out_dir.exists() and not cache.exists()
