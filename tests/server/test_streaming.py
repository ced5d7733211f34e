"""O2: streams carry accepted sentences only; a rejected draft never leaves the process.

The scripted model's drafts all contain a sentinel word at low probability, so every draft is
rejected and regenerated from documents; the sentinel must not appear in any byte of any
response (JSON, flare SSE, OpenAI JSON, OpenAI SSE), while the owner's trace shows the draft.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from flare.config import Settings
from flare.engine.loop import Flare
from flare.retrieve.tantivy_index import TantivyRetriever
from flare.server import Limits, create_app
from flare.server.sse import SSE_VERSION
from flare.testing.scripted import ScriptedLM
from tests.server.support import (
    DRAFT_SENTINEL,
    FIRST,
    QUESTION,
    REGEN,
    STAFF_KEY,
    TEMPLATE,
    LiveServer,
    keys,
    scripted,
    sse_events,
)


@pytest.fixture()
def server(index_dir: Path) -> Iterator[LiveServer]:
    engine = Flare(scripted(), TantivyRetriever(index_dir), Settings(theta=0.5),
                   template=TEMPLATE)  # fmt: skip
    with LiveServer(create_app(engine, keys(), Limits())) as live:
        yield live


def test_no_draft_in_any_streamed_or_returned_byte(server: LiveServer) -> None:
    bodies: dict[str, bytes] = {}
    with server.client(STAFF_KEY) as http:
        r = http.post("/v1/answers", json={"question": QUESTION})
        assert r.status_code == 200, r.text
        bodies["answers-json"] = r.content
        answer = r.json()
        with http.stream("POST", "/v1/answers", json={"question": QUESTION, "stream": True}) as s:
            assert s.headers["content-type"].startswith("text/event-stream")
            bodies["answers-sse"] = b"".join(s.iter_raw())
        chat = {"model": "any", "messages": [{"role": "user", "content": QUESTION}]}
        r = http.post("/v1/chat/completions", json=chat)
        assert r.status_code == 200, r.text
        bodies["chat-json"] = r.content
        with http.stream("POST", "/v1/chat/completions", json={**chat, "stream": True}) as s:
            bodies["chat-sse"] = b"".join(s.iter_raw())
        trace = http.get(f"/v1/traces/{answer['trace_id']}").json()

    assert [s["text"] for s in answer["sentences"]] == [FIRST.strip(), REGEN.strip()]
    for name, body in bodies.items():
        assert DRAFT_SENTINEL.encode() not in body, f"a rejected draft leaked into {name}"
        assert REGEN.strip().encode() in body, name
    # The draft did exist and was rejected: the owner's trace (a debugging record) shows it.
    step = trace["steps"][1]
    assert DRAFT_SENTINEL in step["draft"] and step["decision"] == "retrieve"
    assert [t.strip() for t, _ in step["low_tokens"]] == [DRAFT_SENTINEL]


def test_flare_sse_is_versioned_and_typed(server: LiveServer) -> None:
    with (
        server.client(STAFF_KEY) as http,
        http.stream("POST", "/v1/answers", json={"question": QUESTION}, headers={"Accept": "text/event-stream"}) as s,
    ):
        raw = b"".join(s.iter_raw())
    assert raw.startswith(f": {SSE_VERSION}\n\n".encode())
    events = sse_events(raw)
    kinds = [e for e, _ in events]
    assert kinds == ["searching", "sentence", "searching", "rewriting", "sentence", "done"]
    payloads = [json.loads(d) for _, d in events]
    assert all(p["v"] == SSE_VERSION for p in payloads)
    first = payloads[1]
    assert first["text"] == FIRST.strip() and first["retrieved"] is True
    assert first["new_sources"] and first["new_sources"][0]["id"] == "travel-2026"
    assert "text" not in first["new_sources"][0]  # sources carry ids and titles, not passages
    assert payloads[-1]["stop_reason"] == "end" and payloads[-1]["trace_id"]


def test_openai_client_streams_only_sentences(server: LiveServer) -> None:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=STAFF_KEY, max_retries=0)
    stream = client.chat.completions.create(
        model="flare", messages=[{"role": "user", "content": QUESTION}], stream=True
    )
    deltas = [c.choices[0].delta.content or "" for c in stream if c.choices]
    text = "".join(deltas)
    assert DRAFT_SENTINEL not in text
    assert text.startswith(FIRST.strip()[:-1]) and "departure" in text
    assert "Sources:" in text and "travel-2026" in text
    done = client.chat.completions.create(model="flare", messages=[{"role": "user", "content": QUESTION}])
    assert done.choices[0].message.content == text
    assert done.choices[0].finish_reason == "stop"


def test_an_answer_that_ends_at_once_is_still_an_answer(index_dir: Path) -> None:
    """The first event can be the last (method none, the model says nothing)."""
    silent = ScriptedLM([(lambda p: True, [])])
    engine = Flare(silent, TantivyRetriever(index_dir), Settings(method="none"), template=TEMPLATE)
    with LiveServer(create_app(engine, keys(), Limits())) as live, live.client(STAFF_KEY) as http:
        answer = http.post("/v1/answers", json={"question": QUESTION})
        chat = http.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": QUESTION}]})
        with http.stream("POST", "/v1/answers", json={"question": QUESTION, "stream": True}) as s:
            events = sse_events(b"".join(s.iter_raw()))
    assert answer.status_code == 200 and answer.json()["sentences"] == []
    assert answer.json()["stop_reason"] == "end"
    assert chat.status_code == 200 and chat.json()["choices"][0]["message"]["content"] == ""
    assert [e for e, _ in events] == ["done"]
