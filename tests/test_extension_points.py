"""Backends registered from outside the package work everywhere a built-in one does, CLI included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import flare
from flare.cli.main import main
from flare.errors import ConfigError
from flare.lm import registry as models
from flare.retrieve import registry as retrievers
from flare.testing.memory import MemoryRetriever
from flare.testing.scripted import ScriptedLM

DOCS = [{"id": "n1", "title": "Northwind", "text": "Northwind Labs was founded by Ada Lovelace in 1843.",
         "meta": {"acl": ["staff"]}},
        {"id": "n2", "title": "Northwind board", "text": "Northwind Labs was founded by the board in 1999.",
         "meta": {"acl": ["board"]}}]  # fmt: skip


@pytest.fixture
def registries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registrations made by a test are undone after it."""
    monkeypatch.setattr(models, "_FACTORIES", dict(models._FACTORIES))
    monkeypatch.setattr(retrievers, "_OPEN", dict(retrievers._OPEN))
    monkeypatch.setattr(retrievers, "_BUILD", dict(retrievers._BUILD))


def test_a_model_and_a_retriever_registered_outside_run_flare_ask(
    registries: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    built: dict[str, MemoryRetriever] = {}

    def build(rest: str, passages: Any, **options: Any) -> int:
        built[rest] = MemoryRetriever(passages)
        return len(built[rest].passages)

    def open_mem(rest: str, **options: Any) -> MemoryRetriever:
        return built[rest]

    def echo(rest: str, **options: Any) -> ScriptedLM:
        lm = ScriptedLM(name=f"echo:{rest}")
        lm.add(lambda p: p.rstrip().endswith("1843."), [])  # said it: the answer ends
        lm.add("Ada Lovelace", ScriptedLM.sentence(" Ada Lovelace founded it in 1843."))
        return lm.add("", ScriptedLM.sentence(" Nobody.", low={"Nobody": 0.1}))

    flare.register_retriever("mem", open_mem, build)
    flare.register_model("echo", echo)
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    main(["index", str(corpus), "--index", "mem:docs", "--quiet"])
    assert [p.id for p in built["docs"].passages] == ["n1", "n2"]
    main(["ask", "Who founded Northwind Labs?", "--index", "mem:docs", "--model", "echo:v1",
          "--filter", "acl=staff", "--json"])  # fmt: skip
    answer = json.loads(capsys.readouterr().out)
    assert answer["answer"] == "Ada Lovelace founded it in 1843."
    assert [s["id"] for s in answer["sources"]] == ["n1"]
    assert all(f is not None and str(f) == "acl=staff" for _, f in built["docs"].queries)
    with pytest.raises(SystemExit):  # the registered retriever's check_filters runs before the model
        main(["ask", "Who?", "--index", "mem:docs", "--model", "echo:v1", "--filter", "colour=red"])
    assert "unknown filter field 'colour'" in capsys.readouterr().err


def test_a_prefix_is_registered_once_unless_replaced(registries: None) -> None:
    flare.register_retriever("mem", lambda rest, **o: MemoryRetriever([]))
    with pytest.raises(ConfigError, match="already registered"):
        flare.register_retriever("mem", lambda rest, **o: MemoryRetriever([]))
    flare.register_retriever("mem", lambda rest, **o: MemoryRetriever([]), replace=True)
    with pytest.raises(ConfigError, match="cannot build"):  # replacing without a builder drops the old one
        flare.build_retriever("mem:x", [])
    with pytest.raises(ConfigError, match="invalid retriever prefix"):
        flare.register_retriever("a/b", lambda rest, **o: MemoryRetriever([]))
