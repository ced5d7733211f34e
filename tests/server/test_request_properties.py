"""Property tests of request validation: any body gives a request or a one-line 400, never
another exception (which the server would answer with a 500) and never a hang."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flare.server.chat import ChatBody, ChatRequest, _question
from flare.server.common import check_media_type, validate
from flare.server.errors import ApiError
from flare.server.routes import AnswerBody, AnswerRequest

PROPERTY = settings(max_examples=200, deadline=2_000, database=None,
                    suppress_health_check=[HealthCheck.too_slow])  # fmt: skip

_chars = st.characters() | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)  # lone surrogates too
_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(_chars, max_size=50)
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=30)  # fmt: skip
_keys = st.sampled_from(["question", "filters", "stream", "max_seconds", "max_retrievals", "max_output_tokens",
                         "max_sentences", "messages", "role", "content", "n", "max_tokens", "type",
                         "text"])  # fmt: skip
_shaped = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(_keys, inner, max_size=6), max_leaves=40)  # fmt: skip


def _encode(value: Any) -> bytes:
    return json.dumps(value, allow_nan=True).encode("utf-8", "surrogatepass")


def _outcome(model: type[AnswerBody] | type[ChatBody], raw: bytes) -> None:
    try:
        body = validate(model, raw)
    except ApiError as err:
        assert err.status == 400 and err.message and "\n" not in err.message
        return
    if isinstance(body, ChatBody):
        try:
            question = _question(body)
        except ApiError as err:
            assert err.status == 400
            return
        assert question.strip()
        question.encode("utf-8")  # strict: a lone surrogate would raise here
    else:
        body.question.encode("utf-8")
        assert all(len(f) <= 1_000 for f in body.filters)


@PROPERTY
@given(st.binary(max_size=500))
def test_any_bytes(raw: bytes) -> None:
    _outcome(AnswerRequest, raw)
    _outcome(ChatRequest, raw)


@PROPERTY
@given(_json | _shaped)
def test_any_json_value(value: Any) -> None:
    raw = _encode(value)
    _outcome(AnswerRequest, raw)
    _outcome(ChatRequest, raw)


@PROPERTY
@given(st.fixed_dictionaries({"question": st.text(max_size=100)}, optional={"filters": st.lists(
    st.text(max_size=50), max_size=20), "stream": _scalars, "max_seconds": _scalars, "max_sentences": _scalars}))
def test_answer_bodies_near_the_valid_shape(value: dict[str, Any]) -> None:
    _outcome(AnswerRequest, _encode(value))


@PROPERTY
@given(st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "assistant"]),
                                       "content": st.text(max_size=60) | st.lists(st.dictionaries(
                                           st.sampled_from(["type", "text"]), st.text(max_size=20)), max_size=3)}),
                max_size=4))  # fmt: skip
def test_chat_bodies_near_the_valid_shape(messages: list[dict[str, Any]]) -> None:
    _outcome(ChatRequest, _encode({"messages": messages, "stream": False}))


@PROPERTY
@given(st.integers(0, 3), st.integers(1, 20_000))
def test_deep_and_wide_bodies(kind: int, n: int) -> None:
    raw = [b"[" * n + b"]" * n, b'{"a":' * n + b"1" + b"}" * n,
           b'{"question": "' + b"\\ud800" * n + b'"}', b'{"filters": [' + b'"a=1",' * n + b'"a=2"]}'][kind]  # fmt: skip
    _outcome(AnswerRequest, raw)
    _outcome(ChatRequest, raw)


@PROPERTY
@given(st.text(max_size=80))
def test_any_content_type(value: str) -> None:
    try:
        check_media_type(value)
    except ApiError as err:
        assert err.status == 415
