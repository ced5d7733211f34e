"""A killed build or a damaged index must not cost data or give a traceback.

Crash consistency: a real ``flare index`` process is killed (SIGKILL) or terminated (SIGTERM)
at four points of a rebuild (tests/retrieve/crash_driver.py); afterwards the previous or the new
index answers, and the next build leaves no debris. Damage: truncated, deleted and byte-flipped
files and a params file that names a field the index lacks fail at open with a
CorpusIndexError and a rebuild hint.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from flare.errors import CorpusIndexError
from flare.retrieve.atomic import PARAMS_FILE, building, recover
from flare.retrieve.tantivy_index import TantivyRetriever, build_index
from flare.types import Passage

DRIVER = Path(__file__).with_name("crash_driver.py")
OLD = [Passage(f"old-{i}", f"Lighthouse keeper report number {i} about the harbour.") for i in range(5)]
NEW = [Passage(f"new-{i}", f"Lighthouse keeper report number {i} about the harbour.") for i in range(5)]


def _write_corpus(path: Path, passages: list[Passage]) -> Path:
    path.write_text("".join(json.dumps({"id": p.id, "text": p.text}) + "\n" for p in passages), encoding="utf-8")
    return path


def _ids(index: Path) -> set[str]:
    return {h.passage.id.split("#")[0] for h in TantivyRetriever(index).search("lighthouse keeper", k=20)}


def _debris(root: Path, name: str = "idx") -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith(f".{name}."))


@pytest.mark.parametrize("sig", ["KILL", "TERM"])
@pytest.mark.parametrize(("point", "survivor"), [("writing", "old"), ("params", "old"), ("swap", "old"),
                                                 ("swapped", "new")])  # fmt: skip
def test_a_killed_rebuild_leaves_an_index_that_answers(tmp_path: Path, point: str, survivor: str, sig: str) -> None:
    index = tmp_path / "idx"
    build_index(OLD, index)
    corpus = _write_corpus(tmp_path / "new.jsonl", NEW)
    run = subprocess.run([sys.executable, str(DRIVER), point, sig, "index", str(corpus), "--index", str(index),
                          "--quiet"], capture_output=True, text=True, timeout=300)  # fmt: skip
    if sig == "KILL":
        assert run.returncode == -9, run.stderr
    else:
        assert run.returncode == 143 and run.stderr.strip() == "flare: terminated", run.stderr
        assert _debris(tmp_path) == []  # SIGTERM runs the cleanup: nothing is left behind
    expected = {p.id for p in (OLD if survivor == "old" else NEW)}
    assert _ids(index) == expected  # opening repairs an interrupted swap
    rebuilt = subprocess.run([sys.executable, "-m", "flare", "index", str(corpus), "--index", str(index), "--quiet"],
                             capture_output=True, text=True, timeout=300)  # fmt: skip
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert _ids(index) == {p.id for p in NEW}
    assert _debris(tmp_path) == []  # the next build deleted what the killed one left


def test_opening_restores_an_index_whose_swap_was_interrupted(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    build_index(OLD, index)
    os.replace(index, tmp_path / ".idx.old-0badc0de")  # the state a crash between the renames leaves
    (tmp_path / ".idx.building-12345678").mkdir()  # and a half-written new index
    assert _ids(index) == {p.id for p in OLD}
    assert _debris(tmp_path) == [".idx.building-12345678"]  # a build deletes it, not a reader
    build_index(NEW, index)
    assert _debris(tmp_path) == []


def test_a_half_deleted_old_index_is_never_restored(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    build_index(OLD, index)
    shutil.copytree(index, tmp_path / ".idx.trash-00000000")  # a crash while deleting the old one
    shutil.rmtree(index)
    assert recover(index) is False and not index.exists()
    with pytest.raises(CorpusIndexError, match="no index directory"):
        TantivyRetriever(index)


def test_a_failed_build_keeps_the_old_index_and_cleans_up(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    build_index(OLD, index)
    with pytest.raises(RuntimeError), building(index) as tmp:
        (tmp / "partial").write_text("x")
        raise RuntimeError("disk full")
    assert _ids(index) == {p.id for p in OLD} and _debris(tmp_path) == []


# -- damage -------------------------------------------------------------------------------------


def _damage(how: str) -> Callable[[Path], None]:
    def segment_files(index: Path, ext: str) -> list[Path]:
        return [p for p in index.iterdir() if p.suffix == ext]

    def apply(index: Path) -> None:
        kind, _, ext = how.partition(":")
        if kind == "field":
            params = json.loads((index / PARAMS_FILE).read_text(encoding="utf-8"))
            params["meta_fields"]["year"]["field"] = "m99"
            (index / PARAMS_FILE).write_text(json.dumps(params), encoding="utf-8")
            return
        files = segment_files(index, ext) or [index / ext]
        for path in files:
            size = path.stat().st_size
            if kind == "truncate":
                os.truncate(path, size // 2)
            elif kind == "flip":
                with path.open("r+b") as fh:  # in place, as a disk error would
                    fh.seek(size // 2)
                    byte = fh.read(1)[0]
                    fh.seek(size // 2)
                    fh.write(bytes([byte ^ 0x5A]))
            else:
                path.unlink()

    return apply


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    index = tmp_path_factory.mktemp("pristine") / "idx"
    build_index([Passage(f"p{i}", f"Report {i} on harbour lights and keepers.", meta={"year": 2000 + i})
                 for i in range(20)], index)  # fmt: skip
    return index


DAMAGE = ["truncate:.store", "flip:.store", "delete:.pos", "truncate:.idx", "flip:.idx", "flip:.term",
          "flip:.fieldnorm", "delete:meta.json", "field:"]  # fmt: skip


@pytest.mark.parametrize("how", DAMAGE)
def test_damage_is_found_at_open_with_a_rebuild_hint(pristine: Path, tmp_path: Path, how: str) -> None:
    index = tmp_path / "idx"
    shutil.copytree(pristine, index)
    _damage(how)(index)
    with pytest.raises(CorpusIndexError) as err:
        TantivyRetriever(index)
    assert "rebuild" in err.value.hint and "\n" not in str(err.value)


@pytest.mark.parametrize("how", ["flip:.store", "flip:.fieldnorm", "flip:.idx"])
def test_without_digests_damage_is_still_one_error_not_a_crash(pristine: Path, tmp_path: Path, how: str) -> None:
    """verify=False skips the digests (huge indexes): what tantivy then meets is wrapped."""
    index = tmp_path / "idx"
    shutil.copytree(pristine, index)
    _damage(how)(index)
    try:
        bm25 = TantivyRetriever(index, verify=False)
        for word in ("report", "harbour", "keepers", "lights"):
            bm25.search(word, k=20)
        for i in range(20):
            bm25.get(f"p{i}")
    except CorpusIndexError as err:
        assert "rebuild" in err.hint and "\n" not in str(err)
        assert err.__cause__ is not None  # what tantivy raised stays chained, for whoever debugs it
    # or the flipped byte changed nothing a search reads: no exception of another kind either way


def test_updates_keep_the_checksums_true(pristine: Path, tmp_path: Path) -> None:
    index = tmp_path / "idx"
    shutil.copytree(pristine, index)
    bm25 = TantivyRetriever(index)
    bm25.add([Passage("p99", "A new report on harbour lights.", meta={"year": 2030})])
    bm25.delete(["p0"])
    reopened = TantivyRetriever(index)  # digests recorded after the commit match the files
    assert reopened.get("p99") is not None and reopened.get("p0") is None
    del bm25, reopened
    gc.collect()  # unmap the files before changing them under tantivy
    _damage("flip:.store")(index)
    with pytest.raises(CorpusIndexError, match="damaged"):
        TantivyRetriever(index)


def test_an_index_from_before_checksums_still_opens(pristine: Path, tmp_path: Path) -> None:
    index = tmp_path / "idx"
    shutil.copytree(pristine, index)
    params = json.loads((index / PARAMS_FILE).read_text(encoding="utf-8"))
    del params["files"]
    (index / PARAMS_FILE).write_text(json.dumps(params), encoding="utf-8")
    assert TantivyRetriever(index).get("p3") is not None
