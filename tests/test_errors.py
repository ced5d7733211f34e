"""One-line error text from any exception, and causes kept on wrapped library errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from flare.errors import CorpusIndexError, one_line
from flare.retrieve.tantivy_index import TantivyRetriever, build_index
from flare.types import Passage


@pytest.mark.parametrize(
    ("err", "text"),
    [
        (ValueError("bad\n   value\tthere"), "bad value there"),
        (KeyError(), "KeyError"),
        (OSError(""), "OSError"),
        (RuntimeError("x" * 400), "x" * 297 + "..."),
    ],
)
def test_one_line(err: BaseException, text: str) -> None:
    assert one_line(err) == text


def test_one_line_respects_a_limit() -> None:
    assert one_line(ValueError("abcdefghij"), 8) == "abcde..."


def test_a_native_panic_in_the_search_library_becomes_one_chained_error(tmp_path: Path) -> None:
    """tantivy's Rust panics arrive as a BaseException that pyo3 does not export; flare wraps any
    BaseException that is not Python's own, and keeps it as the cause."""
    class Panic(BaseException):  # what pyo3 raises for a panic: not an Exception
        pass

    index = tmp_path / "idx"
    build_index([Passage("p0", "The harbour lights.")], index)
    bm25 = TantivyRetriever(index)
    panic = Panic("called `Result::unwrap()` on an `Err` value:\n  corrupted block")
    with pytest.raises(CorpusIndexError) as err, bm25._damage("search failed"):
        raise panic
    assert err.value.__cause__ is panic and "\n" not in str(err.value)
    for passthrough in (KeyboardInterrupt(), SystemExit(3), RuntimeError("a bug of ours")):
        with pytest.raises(type(passthrough)), bm25._damage("search failed"):
            raise passthrough
