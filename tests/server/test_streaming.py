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
    engine = Flare(scripted(), TantivyRetriever(index_dir), Settings(theta=0.5, trigger="min", verify="off"),
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


WRONG = " Trips need approval 7 working days before departure."  # the policy says five


def _verifying_server(index_dir: Path, mode: str) -> LiveServer:
    lm = scripted()
    lm.rules[2] = (lm.rules[2][0], ScriptedLM.sentence(WRONG + " And"))
    engine = Flare(lm, TantivyRetriever(index_dir), Settings(theta=0.5, verify=mode), template=TEMPLATE)  # type: ignore[arg-type]
    return LiveServer(create_app(engine, keys(), Limits()))


def _all_bodies(live: LiveServer) -> dict[str, bytes]:
    bodies: dict[str, bytes] = {}
    chat = {"model": "any", "messages": [{"role": "user", "content": QUESTION}]}
    with live.client(STAFF_KEY) as http:
        bodies["answers-json"] = http.post("/v1/answers", json={"question": QUESTION}).content
        with http.stream("POST", "/v1/answers", json={"question": QUESTION, "stream": True}) as s:
            bodies["answers-sse"] = b"".join(s.iter_raw())
        bodies["chat-json"] = http.post("/v1/chat/completions", json=chat).content
        with http.stream("POST", "/v1/chat/completions", json={**chat, "stream": True}) as s:
            bodies["chat-sse"] = b"".join(s.iter_raw())
    return bodies


def test_a_dropped_sentence_is_in_no_streamed_or_returned_byte(index_dir: Path) -> None:
    with _verifying_server(index_dir, "drop") as live:
        bodies = _all_bodies(live)
    for name, body in bodies.items():
        assert b"7 working days" not in body, f"a dropped sentence leaked into {name}"
        assert FIRST.strip()[:-1].encode() in body, name


def test_a_flagged_sentence_is_marked_in_every_output(index_dir: Path) -> None:
    with _verifying_server(index_dir, "flag") as live:
        bodies = _all_bodies(live)
    answer = json.loads(bodies["answers-json"])
    assert answer["sentences"][1]["flagged"] is True and answer["sentences"][1]["unsupported"] == ["7"]
    assert "departure[?]." in answer["rendered"]
    events = [json.loads(d) for e, d in sse_events(bodies["answers-sse"]) if e == "sentence"]
    assert events[1]["flagged"] is True and events[1]["rendered"].endswith("[?].")
    assert events[0]["flagged"] is False and events[0]["support"] == "supported"
    content = json.loads(bodies["chat-json"])["choices"][0]["message"]["content"]
    assert "departure[?]." in content and '"7" not found in the passages it was written from' in content
    streamed = "".join(
        json.loads(d)["choices"][0]["delta"].get("content") or ""
        for _, d in sse_events(bodies["chat-sse"]) if d != "[DONE]" and json.loads(d)["choices"]
    )  # fmt: skip
    assert streamed == content  # the chat stream adds up to the same marked answer
