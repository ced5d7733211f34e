"""The chat backend on llama.cpp's real server (xllamacpp, bundled SmolLM2): with logprobs, with
logprobs stripped by a loopback proxy, and dressed as a hosted API (instructed, no logprobs).

The corpus is made up, so the cited facts can only come from the passages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from flare.config import Settings
from flare.engine.loop import Flare
from flare.errors import ModelError
from flare.lm.base import LanguageModel
from flare.lm.llama_server import LlamaServerModel
from flare.lm.openai_chat import OpenAIChatModel
from flare.lm.openai_http import OpenAIHTTPModel
from flare.retrieve.corpus import load_corpus
from flare.retrieve.filters import Filters
from flare.retrieve.registry import build_retriever, open_retriever
from flare.server import KeyStore, Limits, create_app
from flare.testing.contracts import LanguageModelContract
from flare.trace.tracers import MemoryTracer
from tests.cli.test_cli_real import CORPUS
from tests.loopback_proxy import Proxy
from tests.server.support import LiveServer, sse_events

pytestmark = pytest.mark.model

QUESTION = "When was the Quillmere lighthouse built, and by whom?"
PUBLIC = Filters.any_of("acl", ["public"])
TEXTS = {d["id"]: d["text"] for d in CORPUS}
Chat = Callable[..., OpenAIChatModel]


@pytest.fixture(scope="module")
def chat() -> Iterator[Chat]:
    made: list[OpenAIHTTPModel] = []

    def make(*args: Any, **options: Any) -> OpenAIChatModel:
        made.append(lm := OpenAIChatModel(*args, **options))
        return lm

    yield make
    for lm in made:
        lm.close()


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("chat-real")
    corpus = root / "quillmere.jsonl"
    corpus.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in CORPUS), encoding="utf-8")
    build_retriever(str(root / "idx"), load_corpus(corpus))
    return root / "idx"


class TestChatOnLlamaServerContract(LanguageModelContract):
    logprob_tolerance = 0.3  # two slots decode in one batch: probabilities move a little

    @pytest.fixture(scope="class")
    @classmethod
    def lm(cls, served: LlamaServerModel, server_key: str, chat: Chat) -> LanguageModel:
        return chat(served.url, api_key=server_key)


class TestChatWithoutLogprobsContract(LanguageModelContract):
    @pytest.fixture(scope="class")
    @classmethod
    def lm(cls, stripped: Proxy, chat: Chat) -> LanguageModel:
        return chat(stripped.url)


def _run(lm: LanguageModel, index: Path, **settings: Any) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
    tracer = MemoryTracer()
    engine = Flare(lm, open_retriever(str(index)), Settings(max_sentences=3, **settings), tracer=tracer)
    answer = engine.answer(QUESTION, filters=PUBLIC)
    return answer.to_dict(), [(s.kind, s.decision, s.draft, s.queries) for s in tracer.traces[0].steps]


def _cited_facts(answer: dict[str, Any]) -> None:
    assert "1847" in answer["answer"] and "Pemberton" in answer["answer"]
    by_n = {s["n"]: s["id"] for s in answer["sources"]}
    assert set(by_n.values()) <= {"lh-1", "lh-2", "zh-1"}  # never the board's passage
    first = answer["sentences"][0]
    assert first["citations"] and all("1847" in TEXTS[by_n[n]] for n in first["citations"])


@pytest.mark.parametrize("trigger", ["support", "min"])
def test_chat_gives_the_completions_answer_on_the_same_server(
    trigger: str, served: LlamaServerModel, server_key: str, index: Path, chat: Chat
) -> None:
    # llama.cpp's results move slightly with what a slot's cache holds (a prompt evaluated fresh
    # gave " The" -1.442 over the end -1.479; evaluated after its cached prefix, -1.526 and -1.272):
    # each backend answers twice, and the second answers, made with the prompts cached, are compared.
    lm = chat(served.url, api_key=server_key)
    assert lm.continuation == "prefill" and lm.supports_logprobs
    with OpenAIHTTPModel(served.url, api_key=server_key) as completions:
        _run(completions, index, trigger=trigger)
        _run(lm, index, trigger=trigger)
        expected = _run(completions, index, trigger=trigger)
        got = _run(lm, index, trigger=trigger)
    assert got[1] == expected[1]  # every step: the same drafts, decisions and queries
    assert got[0]["answer"] == expected[0]["answer"] and got[0]["sources"] == expected[0]["sources"]
    _cited_facts(got[0])


def test_without_logprobs_the_evidence_trigger_answers(stripped: Proxy, index: Path, chat: Chat) -> None:
    lm = chat(stripped.url)
    assert not lm.supports_logprobs and lm.continuation == "prefill"  # llama.cpp's /props still answers
    answer, steps = _run(lm, index)
    _cited_facts(answer)
    assert steps[0][:2] == ("initial", "retrieve")
    for verify in ("drop", "retry", "off"):
        _cited_facts(_run(lm, index, verify=verify)[0])
    with pytest.raises(ModelError, match="trigger=min needs"):
        _run(lm, index, trigger="min")


def test_a_hosted_looking_api_is_instructed(hosted: Proxy, index: Path, chat: Chat) -> None:
    lm = chat(hosted.url)
    assert lm.continuation == "instruct" and not lm.supports_logprobs and not lm.supports_logit_bias
    answer, _ = _run(lm, index)
    _cited_facts(answer)
    assert "/v1/chat/completions" in hosted.requests and "/v1/completions" not in hosted.requests


def _ask(index: Path, model: str, *extra: str, key: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FLARE_OPENAI_API_KEY": key, "FLARE_THREADS": "1"}
    cmd = [sys.executable, "-m", "flare", "ask", QUESTION, "--index", str(index), "--filter", "acl=public",
           "--model", model, "--max-sentences", "2", "--json", "-v", *extra]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)


def test_flare_ask_through_the_chat_backend(
    served: LlamaServerModel, server_key: str, stripped: Proxy, index: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    out = _ask(index, f"openai-chat:{served.url}#smollm2", "--trace", str(trace), key=server_key)
    assert out.returncode == 0, out.stderr
    _cited_facts(json.loads(out.stdout))
    assert "token logprobs yes" in out.stderr and "continues the answer by prefill" in out.stderr
    record = json.loads(trace.read_text(encoding="utf-8").splitlines()[0])
    assert record["model"] == f"openai-chat:{served.url}#smollm2"
    assert record["steps"][0]["queries"] == [QUESTION]
    bare = _ask(index, f"openai-chat:{stripped.url}#smollm2")
    assert bare.returncode == 0, bare.stderr
    _cited_facts(json.loads(bare.stdout))
    assert "token logprobs no" in bare.stderr and "trigger=support (default)" in bare.stderr
    refused = _ask(index, f"openai-chat:{stripped.url}#smollm2", "--trigger", "min")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "trigger=min needs" in refused.stderr and "--trigger support" in refused.stderr


def test_flare_serve_through_the_chat_backend(
    served: LlamaServerModel, server_key: str, stripped: Proxy, index: Path, chat: Chat
) -> None:
    staff = "sk-public-0123456789abcdef"
    store = KeyStore.from_config({"keys": [{"key": staff, "principal": "reader", "groups": ["public"]}]})
    for lm in (chat(served.url, api_key=server_key, max_parallel=2), chat(stripped.url)):
        engine = Flare(lm, open_retriever(str(index)), Settings(max_sentences=2))
        with LiveServer(create_app(engine, store, Limits(max_sentences=2))) as live, live.client(staff) as http:
            answer = http.post("/v1/answers", json={"question": QUESTION}).json()
            _cited_facts(answer)
            with http.stream("POST", "/v1/answers", json={"question": QUESTION, "stream": True}) as s:
                events = sse_events(b"".join(s.iter_raw()))
            streamed = [json.loads(data) for name, data in events if name == "sentence"]
            assert [e["text"] for e in streamed] == [s["text"] for s in answer["sentences"]]
            trace = http.get(f"/v1/traces/{answer['trace_id']}").json()
            assert trace["model"] == lm.name and trace["steps"]
            assert http.post("/v1/answers", json={"question": QUESTION, "filters": ["year>=2000"]}).json()[
                "stop_reason"] in ("no_evidence", "end")  # fmt: skip
