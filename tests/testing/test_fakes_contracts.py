"""The fakes flare ships pass the contracts flare ships: the scripted LM and the memory retriever."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flare.lm.base import LanguageModel
from flare.lm.registry import resolve_model
from flare.testing.contracts import LanguageModelContract, MakeRetriever, RetrieverContract
from flare.testing.memory import MemoryRetriever
from flare.testing.scripted import ScriptedLM

SAYS = " Paris is the capital of France, on the Seine. It is large."


class TestMemoryRetrieverContract(RetrieverContract):
    @pytest.fixture(scope="class")
    @classmethod
    def make_retriever(cls) -> MakeRetriever:
        return MemoryRetriever


class TestScriptedLMContract(LanguageModelContract):
    @pytest.fixture(scope="class")
    @classmethod
    def lm(cls) -> LanguageModel:
        return ScriptedLM([("", ScriptedLM.sentence(SAYS, low={"Seine": 0.3}))])


class TestScriptFileContract(LanguageModelContract):
    """The same contract through ``--model scripted:FILE``, the way the CLI loads it."""

    @pytest.fixture(scope="class")
    @classmethod
    def lm(cls, tmp_path_factory: pytest.TempPathFactory) -> LanguageModel:
        path: Path = tmp_path_factory.mktemp("script") / "lm.json"
        rules = [{"match": "中国", "say": "最大的城市。"}, {"say": SAYS, "low": {"Seine": 0.3}}]
        path.write_text(json.dumps({"name": "file-lm", "rules": rules}, ensure_ascii=False), encoding="utf-8")
        return resolve_model(f"scripted:{path}", n_threads=1)
