"""Where dataset names are looked up: $FLARE_DATA, else shared/data beside the checkout; never a fixed path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flare.errors import InputError
from flare.evaluate import datasets
from flare.evaluate.datasets import DATA_ROOT_ENV, data_root, dataset_dir, load_dataset

CHECKOUT = Path(__file__).resolve().parents[2]


def make(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "questions.jsonl").write_text(json.dumps({"id": "q", "question": "Q?", "answers": ["a"]}) + "\n")
    (folder / "corpus.jsonl").write_text(json.dumps({"id": "p", "text": "a"}) + "\n")
    return folder


def test_names_are_looked_up_under_flare_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make(tmp_path / "data", "mini")
    monkeypatch.setenv(DATA_ROOT_ENV, str(tmp_path / "data"))
    assert data_root() == tmp_path / "data"
    ds = load_dataset("mini")
    assert ds.folder == tmp_path / "data" / "mini" and [e.id for e in ds.examples] == ["q"]
    assert dataset_dir(make(tmp_path, "elsewhere")) == tmp_path / "elsewhere"  # a folder path wins
    with pytest.raises(InputError) as info:
        load_dataset("nosuch")
    assert str(tmp_path / "data" / "nosuch") in info.value.message and DATA_ROOT_ENV in info.value.hint


def test_without_flare_data_names_resolve_beside_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATA_ROOT_ENV, raising=False)
    assert data_root() == CHECKOUT.parent / "shared" / "data"
    if not (CHECKOUT.parent / "shared" / "data" / "strategyqa" / "questions.jsonl").exists():
        pytest.skip("no shared/data beside this checkout")
    assert load_dataset("strategyqa").folder == CHECKOUT.parent / "shared" / "data" / "strategyqa"


def test_an_installed_package_has_no_default_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATA_ROOT_ENV, raising=False)
    fake = tmp_path / "lib" / "python3.11" / "site-packages" / "flare" / "evaluate" / "datasets.py"
    monkeypatch.setattr(datasets, "__file__", str(fake))
    assert data_root() is None
    with pytest.raises(InputError) as info:
        load_dataset("2wikimultihopqa")
    assert "set FLARE_DATA" in info.value.hint and "looked in 2wikimultihopqa)" in info.value.message
