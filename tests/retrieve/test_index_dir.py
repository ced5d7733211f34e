"""The BM25 index directory: params file, versioning, atomic (re)builds, progress."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from flare.errors import CorpusIndexError, InputError
from flare.retrieve.atomic import PARAMS_FILE
from flare.retrieve.corpus import MetaKind
from flare.retrieve.tantivy_index import (
    FORMAT_VERSION,
    TantivyRetriever,
    build_index,
)
from flare.types import Passage

MakeIndex = Callable[[Iterable[Passage]], TantivyRetriever]


def top_id(bm25: TantivyRetriever, query: str) -> str:
    return bm25.search(query, k=1)[0].passage.id


# ---------------------------------------------------------------- the index directory


def test_params_file_records_version_count_fields_and_analyzer(bm25: TantivyRetriever, passages: list[Passage]) -> None:
    params = json.loads((bm25.index_dir / PARAMS_FILE).read_text("utf-8"))
    assert params["version"] == FORMAT_VERSION
    assert params["count"] == len(passages)
    assert params["analyzer"] == "en-zh-2"
    assert params["meta_fields"]["acl"] == {"type": "str", "list": True, "field": "m0"}
    assert bm25.meta_fields["year"] == MetaKind("int")
    assert bm25.meta_fields["draft"] == MetaKind("bool")


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"version": 99}, "version 99"),
        ({"version": None}, "version None"),
        ({"analyzer": "other"}, "analyzer"),
        ({"format": "other"}, "params"),
        ({"count": 1}, "incomplete"),
        ({"meta_fields": {"x": {"type": "date"}}}, "meta_fields"),
    ],
)
def test_a_bad_params_file_fails_to_open_with_a_hint(
    make_index: MakeIndex, passages: list[Passage], change: dict[str, Any], needle: str
) -> None:
    path = make_index(passages[:2]).index_dir / PARAMS_FILE
    path.write_text(json.dumps(json.loads(path.read_text("utf-8")) | change), "utf-8")
    with pytest.raises(CorpusIndexError) as err:
        TantivyRetriever(path.parent)
    assert needle in err.value.message
    assert "flare index" in err.value.hint and "--index" in err.value.hint


def test_missing_directory_or_params_file(tmp_path: Path) -> None:
    with pytest.raises(CorpusIndexError) as err:
        TantivyRetriever(tmp_path / "nope")
    assert "flare index" in err.value.hint
    (tmp_path / "empty").mkdir()
    with pytest.raises(CorpusIndexError, match=PARAMS_FILE):
        TantivyRetriever(tmp_path / "empty")


def test_rebuild_replaces_the_index_and_leaves_nothing_behind(tmp_path: Path, passages: list[Passage]) -> None:
    target = tmp_path / "index"
    build_index(passages[:2], target)
    info = build_index(passages[2:], target)
    assert (info.path, info.count) == (target, len(passages) - 2)
    assert len(TantivyRetriever(target)) == len(passages) - 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]


def test_a_failed_rebuild_keeps_the_old_index(tmp_path: Path, passages: list[Passage]) -> None:
    target = tmp_path / "index"
    build_index(passages, target)

    def fail_half_way(done: int, total: int) -> None:
        if done == total // 2:
            raise RuntimeError("disk full")

    many = [Passage(f"n{i}", f"new text {i}") for i in range(40)]
    with pytest.raises(RuntimeError, match="disk full"):
        build_index(many, target, progress=fail_half_way)
    bad = [*many, Passage("n1", "duplicate id")]
    with pytest.raises(InputError, match="duplicate"):
        build_index(bad, target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]
    bm25 = TantivyRetriever(target)
    assert len(bm25) == len(passages)
    assert top_id(bm25, "Mount Etna") == "volcano"


def test_build_refuses_to_replace_a_directory_that_is_not_an_index(tmp_path: Path, passages: list[Passage]) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine", "utf-8")
    with pytest.raises(CorpusIndexError, match="refusing"):
        build_index(passages, tmp_path / "notes")
    assert (tmp_path / "notes" / "keep.txt").read_text("utf-8") == "mine"


@pytest.mark.parametrize(
    "bad",
    [[], [Passage("a", "x", meta={"f": 1}), Passage("b", "y", meta={"f": "1"})]],
)
def test_build_rejects_bad_passages(tmp_path: Path, bad: list[Passage]) -> None:
    with pytest.raises(InputError):
        build_index(bad, tmp_path / "index")
    assert list(tmp_path.iterdir()) == []


def test_progress_bar_and_callback(tmp_path: Path, passages: list[Passage], capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[tuple[int, int]] = []
    build_index(passages, tmp_path / "a", progress=lambda done, total: calls.append((done, total)))
    assert calls == [(i, len(passages)) for i in range(1, len(passages) + 1)]
    build_index(passages, tmp_path / "b", progress=True)
    captured = capsys.readouterr()
    assert "indexing" in captured.err and captured.out == ""
    build_index(passages, tmp_path / "c")
    assert capsys.readouterr().err == ""


def test_add_rejects_meta_the_schema_does_not_have(tmp_path: Path) -> None:
    build_index([Passage("a", "alpha text", "A", {"year": 2026})], tmp_path / "ix")
    r = TantivyRetriever(tmp_path / "ix")
    with pytest.raises(InputError, match="colour"):
        r.add([Passage("b", "beta text", "B", {"colour": "red"})])
    with pytest.raises(InputError, match="year"):
        r.add([Passage("b", "beta text", "B", {"year": "2026"})])
    r.add([Passage("b", "beta text", "B", {"year": 2025})])
    assert len(r) == 2 and len(TantivyRetriever(tmp_path / "ix")) == 2  # params count follows
    r.delete(["a", "missing"])
    assert [h.passage.id for h in r.search("alpha beta text", k=5)] == ["b"]
