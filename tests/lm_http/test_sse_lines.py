"""The event-stream reader of the OpenAI-compatible backend: lines split as SSE defines them.

The stream arrives in chunks cut anywhere (inside a line, between a CR and its LF, inside a
multi-byte character); the lines must come out as if the whole body had been split at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from flare.lm.openai_http import OpenAIHTTPModel, _lines

URL = "http://test.invalid/v1"

pieces = st.lists(st.sampled_from([b"data: ", b"{}", b"\n", b"\r\n", b"\r", b"\n\n", b"x", "中".encode(), b" "]),
                  max_size=30)  # fmt: skip
cuts = st.lists(st.integers(min_value=0, max_value=64), max_size=12)


def chunked(body: bytes, at: list[int]) -> Iterator[bytes]:
    start = 0
    for cut in sorted({min(c, len(body)) for c in at}):
        yield body[start:cut]  # some empty: httpx may hand over an empty chunk too
        start = cut
    yield body[start:]


@settings(max_examples=500, deadline=None)
@given(pieces, cuts)
def test_lines_of_any_chunking_equal_splitting_the_whole_body(parts: list[bytes], at: list[int]) -> None:
    body = b"".join(parts)
    assert list(_lines(chunked(body, at))) == body.splitlines()


def _stream(events: list[bytes]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("tokenize"):
            return httpx.Response(404)
        return httpx.Response(200, content=iter(events), headers={"content-type": "text/event-stream"})

    return httpx.MockTransport(handler)


def _event(text: str, logprob: float, finish: str | None = None) -> bytes:
    lp = {"tokens": [text], "token_logprobs": [logprob]} if text else None
    choice = {"text": text, "logprobs": lp, "finish_reason": finish}
    return b"data: " + json.dumps({"choices": [choice]}, ensure_ascii=False).encode() + b"\r\n\r\n"


def test_a_unicode_line_separator_inside_a_token_is_text_not_a_line_end() -> None:
    """llama.cpp sends JSON strings as raw UTF-8: U+2028 or U+0085 in a token is part of it."""
    body = [_event(" a\u2028b", -0.1), _event("\x85c.", -0.2), _event("", 0.0, "length"), b"data: [DONE]\r\n\r\n"]
    lm = OpenAIHTTPModel(URL, "m", transport=_stream(body), logprobs=True, backoff=0.0)
    c = lm.complete("Q", max_tokens=8, stop_when=lambda t: False)
    assert (c.text, c.finish_reason) == (" a\u2028b\x85c.", "length")
    assert [t.logprob for t in c.tokens] == [-0.1, -0.2]


def test_events_split_across_chunks_and_cr_lf_are_read_whole() -> None:
    whole = b"".join([_event(" Paris", -0.1), _event(".", -0.2), _event(" It", -0.3)])
    body = [whole[i : i + 7] for i in range(0, len(whole), 7)]  # cut mid-line and mid-CR LF
    lm = OpenAIHTTPModel(URL, "m", transport=_stream(body), logprobs=True, backoff=0.0)
    c = lm.complete("Q", max_tokens=9, stop_when=lambda t: "." in t)
    assert (c.text, c.finish_reason, [t.logprob for t in c.tokens]) == (" Paris.", "sentence", [-0.1, -0.2])
