"""The OpenAI-compatible backend against scripted HTTP answers (no server, no model).

httpx's MockTransport plays the server, so retries, error messages and the three logprob
formats are checked without a network.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from flare.errors import ConfigError, ModelError
from flare.lm.openai_http import OpenAIHTTPModel, from_spec

Handler = Callable[[httpx.Request], httpx.Response]
URL = "http://test.invalid/v1"


def _model(handler: Handler, **options: object) -> OpenAIHTTPModel:
    options.setdefault("backoff", 0.0)
    return OpenAIHTTPModel(URL, "m", transport=httpx.MockTransport(handler), **options)  # type: ignore[arg-type]


def _answer(text: str, logprobs: object, finish: str = "length") -> httpx.Response:
    body = {"choices": [{"text": text, "logprobs": logprobs, "finish_reason": finish}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3}}  # fmt: skip
    return httpx.Response(200, json=body)


def test_retries_on_503_then_succeeds() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) < 3:
            return httpx.Response(503, text="busy")
        return _answer(" Paris.", {"tokens": [" Paris", "."], "token_logprobs": [-0.1, -0.2],
                                   "text_offset": [10, 16]})  # fmt: skip

    c = _model(handler, logprobs=True).complete("Q", max_tokens=3)
    assert c.text == " Paris." and [t.text for t in c.tokens] == [" Paris", "."]
    assert len(calls) == 3 and c.prompt_tokens == 5


def test_gives_up_with_a_model_error() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(ModelError, match="after 3 attempts"):
        _model(refuse, logprobs=True, max_retries=2).complete("Q", max_tokens=3)


def test_client_errors_are_not_retried() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(400, json={"error": "bad max_tokens"})

    with pytest.raises(ModelError, match=r"HTTP 400.*bad max_tokens"):
        _model(handler, logprobs=True).complete("Q", max_tokens=3)
    assert len(calls) == 1


def test_missing_logprobs_is_a_clear_error_and_probe_says_no() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return _answer(" Paris", None)

    with pytest.raises(ModelError, match="no logprobs"):
        _model(handler, logprobs=True).complete("Q", max_tokens=3)
    probed = _model(handler)
    assert probed.supports_logprobs is False
    c = probed.complete("Q", max_tokens=3)
    assert c.text == " Paris" and c.tokens == ()


def test_bytes_format_merges_split_characters() -> None:
    zhong = "中".encode()
    content = [{"token": "", "bytes": [zhong[0]], "logprob": -0.5},
               {"token": "", "bytes": list(zhong[1:]), "logprob": -0.25},
               {"token": "!", "bytes": [33], "logprob": -0.1}]  # fmt: skip

    def handler(request: httpx.Request) -> httpx.Response:
        return _answer("中!", {"content": content})

    c = _model(handler, logprobs=True).complete("Q", max_tokens=3)
    assert [(t.text, t.logprob) for t in c.tokens] == [("中", -0.75), ("!", -0.1)]
    assert c.generated_tokens == 3


def test_a_character_cut_off_by_max_tokens_is_dropped() -> None:
    """llama.cpp's server (as measured) writes U+FFFD for the bytes max_tokens cut off and sends
    no entry for their tokens, nor for the first tokens of a character it did finish."""
    content = [{"id": 1, "token": "中", "bytes": list("中".encode()), "logprob": -0.5},
               {"id": 2, "token": "国", "bytes": list("国".encode()), "logprob": -0.25}]  # fmt: skip

    def handler(request: httpx.Request) -> httpx.Response:
        body = {"choices": [{"text": "中国\ufffd", "logprobs": {"content": content}, "finish_reason": "length"}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 6}}  # fmt: skip
        return httpx.Response(200, json=body)

    c = _model(handler, logprobs=True).complete("Q", max_tokens=6)
    assert (c.text, c.finish_reason, c.generated_tokens) == ("中国", "length", 6)
    assert [(t.text, t.logprob) for t in c.tokens] == [("中", -0.5), ("国", -0.25)]
    cut = _model(handler, logprobs=True).complete("Q", max_tokens=6, stop_when=lambda t: t.endswith("中"))
    assert (cut.text, cut.finish_reason, cut.generated_tokens) == ("中", "sentence", 1)


def test_an_end_of_generation_token_is_not_counted() -> None:
    """llama.cpp's server counts the end-of-generation token in ``completion_tokens``; in-process does not."""

    def handler(request: httpx.Request) -> httpx.Response:
        body = {"choices": [{"text": "", "logprobs": {"content": []}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 1}}  # fmt: skip
        return httpx.Response(200, json=body)

    c = _model(handler, logprobs=True).complete("Q", max_tokens=6)
    assert (c.text, c.finish_reason, c.generated_tokens) == ("", "stop", 0)


def test_offsets_recover_characters_lost_from_token_strings() -> None:
    lp = {"tokens": ["中", "", "", "。"], "token_logprobs": [-1.0, -0.5, -0.25, -0.1],
          "text_offset": [7, 8, 8, 9]}  # fmt: skip

    def handler(request: httpx.Request) -> httpx.Response:
        return _answer("中国。", lp)

    c = _model(handler, logprobs=True).complete("Q", max_tokens=4)
    assert [(t.text, t.logprob) for t in c.tokens] == [("中", -1.0), ("国", -0.75), ("。", -0.1)]


def test_tokens_past_a_stop_sequence_are_cut_and_stop_when_applies() -> None:
    lp = {"tokens": [" Paris", ".", " It", "\n"], "token_logprobs": [-0.1, -0.2, -0.3, -0.4],
          "text_offset": [0, 6, 7, 10]}  # fmt: skip

    def handler(request: httpx.Request) -> httpx.Response:
        assert json.loads(request.content)["stop"] == [" I"]
        return _answer(" Paris.", lp, "stop")

    c = _model(handler, logprobs=True).complete("Q", max_tokens=9, stop=[" I"])
    assert [t.text for t in c.tokens] == [" Paris", "."] and c.finish_reason == "stop"
    s = _model(handler, logprobs=True, stream=False).complete(
        "Q", max_tokens=9, stop=[" I"], stop_when=lambda t: t.endswith("s")
    )
    assert (s.text, s.finish_reason) == (" Paris", "sentence")


def test_logit_bias_without_tokenizer_is_a_model_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("tokenize"):
            return httpx.Response(404)
        return _answer("x", {"tokens": ["x"], "token_logprobs": [-0.1], "text_offset": [0]})

    lm = _model(handler, logprobs=True)
    assert lm.supports_logit_bias is False
    with pytest.raises(ModelError, match="tokenize endpoint"):
        lm.complete("Q", max_tokens=1, logit_bias={"[": 2.0})


def test_logit_bias_maps_text_to_token_ids() -> None:
    sent: list[object] = []
    ids = {"": [], "a": [64], "[": [58], " [": [395], "[Search": [58, 7], " [Search": [395, 7]}

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if request.url.path == "/tokenize":
            return httpx.Response(200, json={"tokens": ids[body["content"]]})
        sent.append(body.get("logit_bias"))
        return _answer("x", {"tokens": ["x"], "token_logprobs": [-0.1], "text_offset": [0]})

    lm = _model(handler, logprobs=True)
    lm.complete("Q", max_tokens=1, logit_bias={"[": 2.0})
    assert sent == [{"58": 2.0, "395": 2.0}]
    with pytest.raises(ModelError, match="not a single token"):
        lm.complete("Q", max_tokens=1, logit_bias={"[Search": 2.0})


def test_settings_and_specs_are_checked() -> None:
    with pytest.raises(ConfigError):
        OpenAIHTTPModel("127.0.0.1:8080/v1")
    with pytest.raises(ConfigError):
        from_spec("#model")
    lm = from_spec("http://127.0.0.1:9/v1#qwen", n_ctx=4096, timeout=1.0)
    assert (lm.base_url, lm.model) == ("http://127.0.0.1:9/v1", "qwen")
    c = lm.complete("Q", max_tokens=0)  # no request for zero tokens
    assert (c.text, c.finish_reason) == ("", "length")
    lm.close()


def _sse(chunks: list[tuple[str, str, float]]) -> bytes:
    lines = []
    for text, token, logprob in chunks:
        lp = {"tokens": [token], "token_logprobs": [logprob], "text_offset": [0]}
        lines.append("data: " + json.dumps({"choices": [{"text": text, "logprobs": lp, "finish_reason": None}]}))
    lines.append("data: [DONE]")
    return ("\n\n".join(lines) + "\n\n").encode()


def test_streaming_stops_reading_when_stop_when_holds() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("tokenize"):
            return httpx.Response(404)
        assert json.loads(request.content)["stream"] is True
        body = _sse([(" Paris", " Paris", -0.1), (".", ".", -0.2), (" It", " It", -0.3)])
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    c = _model(handler, logprobs=True, stream=True).complete("Q", max_tokens=9, stop_when=lambda t: "." in t)
    assert (c.text, c.finish_reason, c.generated_tokens) == (" Paris.", "sentence", 2)
    assert c.prompt_tokens == 0  # no tokenize endpoint to count it with
    assert [t.logprob for t in c.tokens] == [-0.1, -0.2]


def test_streamed_byte_tokens_fall_back_to_one_request() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content).get("stream"):
            body = _sse([("", "", -0.5), ("", "", -0.25)])  # llama_cpp.server drops the character
            return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
        lp = {"tokens": ["", ""], "token_logprobs": [-0.5, -0.25], "text_offset": [3, 3]}
        return _answer("中", lp)

    c = _model(handler, logprobs=True, stream=True).complete("Q", max_tokens=2, stop_when=lambda t: False)
    assert [(t.text, t.logprob) for t in c.tokens] == [("中", -0.75)]
