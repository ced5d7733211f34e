"""The OpenAI backend shared by threads (max_parallel) and llama.cpp's streamed logprob format.

httpx's MockTransport plays the server; it counts how many requests are inside it at once.
"""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from flare.errors import ConfigError
from flare.lm.openai_http import OpenAIHTTPModel

URL = "http://test.invalid/v1"


def _sse(chunks: list[dict[str, object]]) -> bytes:
    lines = ["data: " + json.dumps(c) for c in chunks] + ["data: [DONE]"]
    return ("\n\n".join(lines) + "\n\n").encode()


def _entry(token: str, logprob: float) -> dict[str, object]:
    data = list(token.encode())
    return {"id": 1, "token": token, "bytes": data, "logprob": logprob, "top_logprobs": []}


def test_llama_cpp_content_stream_with_timings() -> None:
    """llama.cpp's server streams ``logprobs.content`` with bytes, and timings per token on request."""
    timings = {"cache_n": 40, "prompt_n": 7}
    chunks: list[dict[str, object]] = [
        {"choices": [{"text": " Paris", "logprobs": {"content": [_entry(" Paris", -0.1)]}}], "timings": timings},
        # one chunk holding both tokens of a split character, as the server sends it
        {"choices": [{"text": " 中", "logprobs": {"content": [
            {"id": 2, "token": " \ufffd", "bytes": [32, 228, 184], "logprob": -0.5},
            {"id": 3, "token": "\ufffd", "bytes": [173], "logprob": -0.25}]}}], "timings": timings},
        {"choices": [{"text": ".", "logprobs": {"content": [_entry(".", -0.2)]}}], "timings": timings},
        {"choices": [{"text": " It", "logprobs": {"content": [_entry(" It", -0.3)]}}], "timings": timings},
    ]  # fmt: skip

    def handler(request: httpx.Request) -> httpx.Response:
        assert not request.url.path.endswith("tokenize"), "timings made the token count unnecessary"
        return httpx.Response(200, content=_sse(chunks), headers={"content-type": "text/event-stream"})

    lm = OpenAIHTTPModel(URL, "m", logprobs=True, transport=httpx.MockTransport(handler))
    c = lm.complete("Q", max_tokens=9, stop_when=lambda t: "." in t)
    assert (c.text, c.finish_reason) == (" Paris 中.", "sentence")
    # whole characters, split where the in-process backend splits them: " " then "中"
    assert [(t.text, t.logprob) for t in c.tokens] == [(" Paris", -0.1), (" ", -0.5), ("中", -0.25), (".", -0.2)]
    assert (c.prompt_tokens, c.prompt_tokens_evaluated, c.generated_tokens) == (47, 7, 4)


def test_a_shared_instance_keeps_at_most_max_parallel_calls_in_flight() -> None:
    lock = threading.Lock()
    now = peak = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal now, peak
        with lock:
            now += 1
            peak = max(peak, now)
        time.sleep(0.1)
        with lock:
            now -= 1
        lp = {"tokens": [" ok"], "token_logprobs": [-0.1]}
        return httpx.Response(200, json={"choices": [{"text": " ok", "logprobs": lp, "finish_reason": "length"}]})

    lm = OpenAIHTTPModel(URL, "m", logprobs=True, max_parallel=3, transport=httpx.MockTransport(handler))
    texts: list[str] = []
    threads = [threading.Thread(target=lambda: texts.append(lm.complete("Q", max_tokens=1).text)) for _ in range(9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert texts == [" ok"] * 9
    assert peak == 3  # nine calls, three at a time


def test_max_parallel_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="max_parallel"):
        OpenAIHTTPModel(URL, max_parallel=0)


def test_held_back_tokens_wait_for_their_text_or_the_end() -> None:
    """llama.cpp streams a token that may start a stop string with its logprob but no text yet."""
    calls: list[bool] = []

    def stream(chunks: list[dict[str, object]]) -> httpx.Response:
        return httpx.Response(200, content=_sse(chunks), headers={"content-type": "text/event-stream"})

    def held(text: str) -> dict[str, object]:
        return {"choices": [{"text": "", "logprobs": {"content": [_entry(text, -0.5)]}}]}

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        calls.append(bool(body.get("stream")))
        if body["prompt"] == "ends":  # "\n" is held back, then the stop string ends the answer
            return stream([held("\n"), {"choices": [{"text": "", "logprobs": None, "finish_reason": "stop"}]}])
        return stream([held(" Q"), {"choices": [{"text": " Qu.", "logprobs": {"content": [_entry("u.", -0.25)]}}]},
                       {"choices": [{"text": " Next", "logprobs": {"content": [_entry(" Next", -0.1)]}}]}])  # fmt: skip

    lm = OpenAIHTTPModel(URL, "m", logprobs=True, transport=httpx.MockTransport(handler))
    lm._tokenizer = None  # no tokenize endpoint: skip the probe
    ended = lm.complete("ends", max_tokens=8, stop=["\n"], stop_when=lambda t: "." in t)
    goes_on = lm.complete("goes on", max_tokens=8, stop=["\n"], stop_when=lambda t: "." in t)
    assert (ended.text, ended.finish_reason, ended.tokens) == ("", "stop", ())
    assert (goes_on.text, goes_on.finish_reason) == (" Qu.", "sentence")
    assert [(t.text, t.logprob) for t in goes_on.tokens] == [(" Q", -0.5), ("u.", -0.25)]
    assert calls == [True, True]  # no fallback to a second, plain request


def test_empty_completion_with_null_logprobs_is_no_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"choices": [{"text": "", "logprobs": None, "finish_reason": "stop"}]})

    lm = OpenAIHTTPModel(URL, "m", logprobs=True, stream=False, transport=httpx.MockTransport(handler))
    c = lm.complete("Q", max_tokens=8, stop=["\n"])
    assert (c.text, c.tokens, c.finish_reason) == ("", (), "stop")
