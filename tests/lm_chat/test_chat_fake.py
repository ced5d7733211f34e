"""The chat backend against flare's fake OpenAI server: the shipped contract, the three ways of
continuing an answer, servers with and without logprobs, retries, cut streams, cancelling."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from flare.config import Settings
from flare.engine.loop import Flare
from flare.errors import ConfigError, ModelError
from flare.lm.base import LanguageModel, parallel_calls
from flare.lm.openai_chat import PLAIN_SYSTEM, OpenAIChatModel, to_messages
from flare.lm.openai_http import OpenAIHTTPModel
from flare.lm.registry import resolve_model
from flare.testing.contracts import LanguageModelContract
from flare.testing.fake_openai import FakeOpenAIServer
from flare.testing.memory import MemoryRetriever
from flare.testing.threaded import ThreadedServer
from flare.trace.tracers import MemoryTracer
from flare.types import Passage

DOCS = [
    Passage("lh", "Ada Pemberton built the Quillmere lighthouse in 1847. It is tall.", "Lighthouse", {}),
    Passage("lamp", "The lighthouse lamp burned whale oil until 1902.", "Lamp", {}),
]
QUESTION = "Who built the Quillmere lighthouse?"
Chat = Callable[..., OpenAIChatModel]


@pytest.fixture(scope="module")
def chat() -> Iterator[Callable[..., OpenAIChatModel]]:
    """Makes chat models; each is closed at the end (no HTTP connection left open)."""
    made: list[OpenAIHTTPModel] = []

    def make(*args: Any, **options: Any) -> OpenAIChatModel:
        made.append(lm := OpenAIChatModel(*args, **options))
        return lm

    yield make
    for lm in made:
        lm.close()


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(0.0, tokenizer=True) as server:
        yield server


@pytest.fixture(scope="module")
def hosted() -> Iterator[FakeOpenAIServer]:
    """Like a hosted chat API: no logprobs, no continuing of an assistant message."""
    with FakeOpenAIServer(0.0, tokenizer=True, logprobs="none", prefill=False) as server:
        yield server


class TestCompletionsOnTheFakeContract(LanguageModelContract):
    """The completions backend on the same fake, for comparison: the same contract."""

    @pytest.fixture(scope="class")
    @classmethod
    def lm(cls, fake: FakeOpenAIServer) -> Iterator[LanguageModel]:
        with OpenAIHTTPModel(fake.url, "fake") as lm:
            yield lm


class TestChatPrefillContract(LanguageModelContract):
    @pytest.fixture(scope="class")
    @classmethod
    def lm(cls, fake: FakeOpenAIServer, chat: Chat) -> LanguageModel:
        return chat(fake.url, "fake", continuation="prefill")


class TestChatInstructContract(LanguageModelContract):
    @pytest.fixture(scope="class")
    @classmethod
    def lm(cls, hosted: FakeOpenAIServer, chat: Chat) -> LanguageModel:
        return chat(hosted.url, "fake")


class TestChatRejectsLogprobsContract(LanguageModelContract):
    @pytest.fixture(scope="class")
    @classmethod
    def lm(cls, chat: Chat) -> Iterator[LanguageModel]:
        with FakeOpenAIServer(0.0, tokenizer=True, logprobs="reject") as server:
            yield chat(server.url, "fake", continuation="vllm")


def test_chatml_prompts_become_messages() -> None:
    engine = Flare(_Echo(), MemoryRetriever(DOCS))
    template = engine.template_for(Settings(), QUESTION)
    prompt = template.render(DOCS[:1], "Who <|im_start|>built it?", "Ada built it.")
    messages, partial = to_messages(prompt)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert partial == "Ada built it."
    assert "Ada Pemberton" in messages[-1]["content"] and "<|im_start|>" not in messages[-1]["content"]
    assert to_messages(template.render([], QUESTION, ""))[1] == ""  # nothing written yet: a reply
    for plain in ("Question: Who?\nAnswer:", "x<|im_start|>user\nHi<|im_end|>\n",
                  "<|im_start|>user\nHi<|im_end|>\nstray<|im_start|>assistant\n"):  # fmt: skip
        assert to_messages(plain) == ([{"role": "system", "content": PLAIN_SYSTEM}], plain)


class _Echo:
    """Just enough of a model for the engine to pick the chat layout (no call is made)."""

    name, supports_logprobs, supports_logit_bias = "echo", True, False
    chat_template = "<|im_start|>"

    def complete(self, prompt: str, **kw: Any) -> Any:
        raise AssertionError("not called")

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def _answer(lm: LanguageModel, **settings: Any) -> tuple[str, list[tuple[str, str | None]]]:
    tracer = MemoryTracer()
    answer = Flare(lm, MemoryRetriever(DOCS), Settings(**settings), tracer=tracer).answer(QUESTION)
    return answer.render(), [(s.kind, s.decision) for s in tracer.traces[0].steps]


def test_every_continuation_gives_the_completions_answer(fake: FakeOpenAIServer, chat: Chat) -> None:
    with OpenAIHTTPModel(fake.url, "fake", chat_template="<|im_start|>") as completions:
        expected = _answer(completions)
        assert "1847[1]" in expected[0] and "until 1902[2]" in expected[0]
        for how in ("prefill", "vllm", "prefix", "instruct"):
            assert _answer(chat(fake.url, "fake", continuation=how)) == expected, how
        instructed = _answer(chat(fake.url, "fake", continuation="instruct"), trigger="min")
        assert instructed == _answer(completions, trigger="min")


def test_instructed_server_continues_with_a_space_and_ends_with_done(hosted: FakeOpenAIServer, chat: Chat) -> None:
    lm = chat(hosted.url, "fake")
    assert lm.continuation == "instruct"  # no /props, no /version: instructed
    turns = "<|im_start|>user\nSearch results:\n[1] L: Ada built it. It is tall.\nQuestion: Who?<|im_end|>\n"
    c = lm.complete(turns + "<|im_start|>assistant\nAda built it.", max_tokens=20, stop_when=lambda t: "." in t)
    assert c.text == " Ada built it." and c.finish_reason == "sentence" and c.tokens == ()
    done = lm.complete(turns + "<|im_start|>assistant\nAda built it. Ada built it.", max_tokens=20,
                       stop_when=lambda t: "." in t)  # fmt: skip
    assert (done.text, done.finish_reason) == ("", "stop")  # the fake replied DONE


def test_without_logprobs_the_evidence_trigger_answers_and_token_rules_fail(hosted: FakeOpenAIServer,
                                                                           chat: Chat) -> None:  # fmt: skip
    lm = chat(hosted.url, "fake")
    assert lm.supports_logprobs is False
    text, steps = _answer(lm)
    assert "1847[1]" in text and steps[0] == ("initial", "retrieve")
    for method in ("single", "instruct"):  # the baselines and FLARE instruct need no logprobs either
        assert "1847[1]" in _answer(lm, method=method)[0]
    assert _answer(lm, method="none")[1]  # runs (the fake knows nothing without documents)
    with pytest.raises(ModelError, match=r"trigger=min needs .*--trigger support"):
        _answer(lm, trigger="min")


def test_specs_and_bad_options(fake: FakeOpenAIServer) -> None:
    lm = resolve_model(f"openai-chat:{fake.url}#fake;continue=instruct", n_threads=1, max_parallel=3)
    assert isinstance(lm, OpenAIChatModel)
    with lm:
        assert lm.continuation == "instruct" and parallel_calls(lm) == 3
        assert lm.name == f"openai-chat:{fake.url}#fake" and "<|im_start|>" in (lm.chat_template or "")
    with pytest.raises(ConfigError, match="unknown openai-chat option"):
        resolve_model(f"openai-chat:{fake.url}#fake;temperature=1")
    with pytest.raises(ConfigError, match="no URL"):
        resolve_model("openai-chat:#fake")
    with pytest.raises(ConfigError, match="unknown continuation"):
        resolve_model(f"openai-chat:{fake.url}#fake;continue=sometimes")
    with pytest.raises(ConfigError, match="http"):
        resolve_model("openai-chat:ftp://x#fake")


def test_stop_when_closes_the_stream_and_parallel_calls_are_bounded(chat: Chat) -> None:
    with FakeOpenAIServer(0.02, tokenizer=True) as server:
        lm = chat(server.url, "fake", continuation="prefill", max_parallel=2)
        c = lm.complete("Question: Who?\nAnswer:", max_tokens=30, stop_when=lambda t: "answer" in t)
        assert c.finish_reason == "sentence" and c.text.endswith("answer")
        threads = [threading.Thread(target=lm.complete, args=("Question: Who?\nAnswer:",),
                                    kwargs={"max_tokens": 8}) for _ in range(5)]  # fmt: skip
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        stats = server.stats()
    assert stats["disconnects"] >= 1  # the server saw the client go: it stops generating
    assert stats["peak_in_flight"] == 2


class _Flaky:
    """A chat endpoint that fails with 503 once, then cuts its first ``cuts`` streams short."""

    def __init__(self, cuts: int) -> None:
        self.cuts, self.calls, self.keys = cuts, 0, list[str]()

    def app(self) -> Starlette:
        async def chat(request: Request) -> Response:
            self.calls += 1
            self.keys.append(request.headers.get("authorization", ""))
            body = json.loads(await request.body())
            if self.calls == 1:
                return JSONResponse({"error": "busy"}, status_code=503)
            if not body.get("stream"):
                message = {"role": "assistant", "content": "Paris is big."}
                return JSONResponse({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
            cut = self.cuts > 0
            self.cuts -= 1

            async def events() -> Any:
                for word in ("Paris", " is", " big", "."):
                    yield f"data: {json.dumps({'choices': [{'delta': {'content': word}}]})}\n\n".encode()
                    if cut and word == " is":
                        return  # no finish_reason, no [DONE]: cut off
                yield b'data: {"choices": [{"delta": {}, "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n'

            return StreamingResponse(events(), media_type="text/event-stream")

        return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


@pytest.mark.parametrize("cuts", [1, 2])
def test_retries_and_cut_streams(cuts: int, monkeypatch: pytest.MonkeyPatch, chat: Chat) -> None:
    monkeypatch.setenv("FLARE_OPENAI_API_KEY", "sk-flare-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-sent")
    flaky = _Flaky(cuts)
    with ThreadedServer(flaky.app(), lifespan="off") as server:
        lm = chat(f"{server.root}/v1", "m", logprobs=False, continuation="instruct", backoff=0.01)
        prompt = "<|im_start|>user\nWhere?<|im_end|>\n<|im_start|>assistant\n"
        if cuts == 1:  # cut once: sent again, and the whole sentence comes back
            c = lm.complete(prompt, max_tokens=10, stop_when=lambda t: t.endswith("."))
            assert (c.text, c.finish_reason) == ("Paris is big.", "sentence")
        else:
            with pytest.raises(ModelError, match="cut off twice"):
                lm.complete(prompt, max_tokens=10, stop_when=lambda t: t.endswith("."))
        assert lm.complete(prompt, max_tokens=10).text == "Paris is big."
    assert flaky.calls == 4 and set(flaky.keys) == {"Bearer sk-flare-test"}
