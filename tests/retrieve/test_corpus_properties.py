"""Property tests of the corpus loader: any file gives passages that index, or one InputError.

Arbitrary bytes, arbitrary JSON lines (deep nesting, huge numbers, lone surrogates, NaN) and
arbitrary text files are loaded; whatever loads must also build a real index, because a corpus
that loads and then crashes the indexer halfway is the failure the loader exists to prevent.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flare.errors import InputError
from flare.retrieve.corpus import load_corpus
from flare.retrieve.tantivy_index import build_index

PROPERTY = settings(max_examples=40, deadline=10_000, database=None,
                    suppress_health_check=[HealthCheck.too_slow])  # fmt: skip

_chars = st.characters() | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
_text = st.text(_chars, max_size=40)
_scalar = st.none() | st.booleans() | st.integers() | st.floats() | _text
_meta_value = _scalar | st.lists(_scalar, max_size=3) | st.dictionaries(_text, _scalar, max_size=2)
_doc = st.fixed_dictionaries(
    {"id": _text | st.integers()},
    optional={"text": _text | st.integers(), "title": _text | st.none(),
              "meta": st.dictionaries(_text, _meta_value, max_size=3) | _scalar},
)  # fmt: skip
_line = _doc.map(lambda d: json.dumps(d, allow_nan=True)) | st.sampled_from(
    ["[" * 5_000 + "]" * 5_000, '{"id": "a", "text": "t", "meta": {"n": 1' + "0" * 5_000 + "}}",
     '{"id": "a", "text": "\\ud800"}', '{"id": "a", "text": "x", "meta": {"y": NaN}}', "", "  "]
)  # fmt: skip


def _load_and_index(path: Path) -> None:
    try:
        passages = load_corpus(path, max_words=20)
    except InputError as err:
        assert err.message and err.hint and "\n" not in err.message
        return
    assert passages
    with tempfile.TemporaryDirectory() as out:
        info = build_index(passages, Path(out) / "idx")  # what loads must index
        assert info.count == len(passages)


@PROPERTY
@given(st.lists(_line, min_size=1, max_size=5))
def test_any_jsonl_lines(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as root:
        path = Path(root) / "c.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
        _load_and_index(path)


@PROPERTY
@given(st.binary(max_size=300))
def test_any_bytes_as_jsonl(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as root:
        path = Path(root) / "c.jsonl"
        path.write_bytes(raw)
        _load_and_index(path)


@PROPERTY
@given(st.lists(st.binary(max_size=200) | _text.map(lambda t: t.encode("utf-8", "surrogatepass")), min_size=1,
                max_size=3))  # fmt: skip
def test_any_text_files_in_a_folder(files: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "docs"
        folder.mkdir()
        for i, data in enumerate(files):
            (folder / f"f{i}.md").write_bytes(data)
        _load_and_index(folder)


@PROPERTY
@given(st.integers(1, 50_000), st.sampled_from(["word ", "。", "a.", "长", " \n\n", "x" * 50]))
def test_long_repetitive_documents(n: int, unit: str) -> None:
    doc: dict[str, Any] = {"id": "d", "text": unit * n + " end"}
    with tempfile.TemporaryDirectory() as root:
        path = Path(root) / "c.jsonl"
        path.write_text(json.dumps(doc) + "\n", encoding="utf-8")
        _load_and_index(path)
