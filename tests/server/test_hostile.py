"""Hostile requests against a live server: none may freeze it, crash it or learn from its errors.

Each test here failed on the server before hardening: a filter that took the event loop for
~37 s, lone surrogates that gave 500, lax types ("stream": "yes"), NaN budgets, UTF-16 bodies,
scores in served traces and the index's field list in filter errors.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from flare.config import Settings
from flare.engine.loop import Flare
from flare.engine.prompts import PromptTemplate
from flare.retrieve.filters import Filters
from flare.retrieve.tantivy_index import TantivyRetriever
from flare.server import Limits, create_app
from flare.trace.tracers import MemoryTracer
from tests.server.support import STAFF_KEY, LiveServer, ParrotLM, keys

QUESTION = "How are travel expenses reimbursed after receipts?"
MB = 1_000_000


class GatedRetriever(TantivyRetriever):
    """The real index; the server's filter check of a ``year`` filter waits for ``release``."""

    def __init__(self, index_dir: Path) -> None:
        super().__init__(index_dir)
        self.entered = threading.Event()
        self.release = threading.Event()

    def check_filters(self, filters: Filters) -> None:
        if "year" in filters.fields and not self.entered.is_set():
            self.entered.set()
            assert self.release.wait(60), "the test never released the filter check"
        super().check_filters(filters)


def _engine(retriever: TantivyRetriever, tracer: MemoryTracer | None = None) -> Flare:
    return Flare(ParrotLM(), retriever, Settings(theta=0.5, max_sentences=2), template=PromptTemplate.plain(),
                 tracer=tracer)  # fmt: skip


@pytest.fixture()
def operator_traces() -> MemoryTracer:
    return MemoryTracer()


@pytest.fixture()
def server(index_dir: Path, operator_traces: MemoryTracer) -> Iterator[LiveServer]:
    limits = Limits(max_body_bytes=4 * MB)  # large enough that the models, not the size cap, must refuse
    with LiveServer(create_app(_engine(TantivyRetriever(index_dir), operator_traces), keys(), limits)) as live:
        yield live


def _post(http: httpx.Client, path: str, body: bytes, ctype: str = "application/json") -> httpx.Response:
    return http.post(path, content=body, headers={"Content-Type": ctype})


def _error(response: httpx.Response, status: int, *words: str) -> str:
    assert response.status_code == status, response.text
    message = str(response.json()["error"]["message"])
    assert "\n" not in message and len(message) < 600
    for word in words:
        assert word in message, message
    return message


def test_healthz_answers_while_a_request_is_being_checked(index_dir: Path) -> None:
    """The filter check (a search) runs off the event loop: /healthz answers while it waits."""
    gated = GatedRetriever(index_dir)
    live = LiveServer(create_app(_engine(gated), keys(), Limits()))
    with live, ThreadPoolExecutor(1) as pool, live.client(STAFF_KEY) as http:
        pending = pool.submit(http.post, "/v1/answers", json={"question": QUESTION, "filters": ["year>=2020"]})
        try:
            assert gated.entered.wait(30), "the request never reached the filter check"
            with live.client(timeout=10) as probe:
                assert probe.get("/healthz").status_code == 200
        finally:
            gated.release.set()
        assert pending.result(timeout=60).status_code == 200


def test_megabyte_filters_and_questions_are_refused_while_healthz_answers(server: LiveServer) -> None:
    attacks = [
        {"question": QUESTION, "filters": ["acl=x" + " " * MB + "y"]},
        {"question": QUESTION, "filters": ["year=" + "1|" * (MB // 2) + "2"]},
        {"question": "why " * (MB // 4)},
        {"question": QUESTION, "filters": ["year>=2020"] * 10_000},
    ]
    stop = threading.Event()
    health: list[int] = []
    problems: list[str] = []

    def poll() -> None:
        # A hang detector, not a speed test: before the fix one such filter held the loop ~37 s
        # (a 1 MB one, hours); 30 s leaves room for a loaded machine.
        with server.client(timeout=30) as probe:
            while not stop.is_set():
                try:
                    health.append(probe.get("/healthz").status_code)
                except httpx.TransportError as err:
                    health.append(-1)
                    problems.append(repr(err))
                    return

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        with server.client(STAFF_KEY) as http:
            replies = [http.post("/v1/answers", json=body) for body in attacks]
    finally:
        stop.set()
        poller.join(30)
    _error(replies[0], 400, "filters.0", "at most 1000 characters")
    _error(replies[1], 400, "filters.0", "at most 1000 characters")
    _error(replies[2], 400, "question", "at most 4000 characters")
    _error(replies[3], 400, "filters", "at most 16 items")
    assert health and set(health) == {200}, problems


def test_bodies_over_the_default_limit_are_413_before_parsing(index_dir: Path) -> None:
    live = LiveServer(create_app(_engine(TantivyRetriever(index_dir)), keys(), Limits()))
    with live, live.client(STAFF_KEY) as http:
        reply = http.post("/v1/answers", json={"question": QUESTION, "filters": ["acl=" + "x" * MB]})
    _error(reply, 413, "larger than 64000 bytes")


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/answers", b'{"question": "hi", "filters": ["acl=\\udfff"]}'),
        ("/v1/answers", b'{"question": "hi \\ud800 there"}'),
        ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "hi \\ud800"}]}'),
        ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": [{"type": "text", "text": "\\udc00"}]}]}'),
    ],
)
def test_lone_surrogates_are_400_and_the_connection_stays_open(server: LiveServer, path: str, body: bytes) -> None:
    with server.client(STAFF_KEY) as http:
        reply = _post(http, path, body)
        _error(reply, 400, "Invalid JSON", "escape")
        assert reply.headers.get("connection") != "close"
        assert http.get("/healthz").status_code == 200  # the same client, the same connection


LAX: list[tuple[str, dict[str, Any] | bytes, str]] = [
    ("/v1/answers", {"question": QUESTION, "stream": "yes"}, "stream"),
    ("/v1/answers", {"question": QUESTION, "stream": 1}, "stream"),
    ("/v1/answers", {"question": QUESTION, "max_sentences": True}, "max_sentences"),
    ("/v1/answers", {"question": QUESTION, "max_sentences": "5"}, "max_sentences"),
    ("/v1/answers", {"question": QUESTION, "max_sentences": 2.5}, "max_sentences"),
    ("/v1/answers", {"question": QUESTION, "filters": "year=2026"}, "filters"),
    ("/v1/answers", {"question": QUESTION, "filters": [2026]}, "filters.0"),
    ("/v1/answers", {"question": 42}, "question"),
    ("/v1/answers", b'{"question": "q?", "max_seconds": NaN}', "max_seconds"),
    ("/v1/answers", b'{"question": "q?", "max_seconds": Infinity}', "finite"),
    ("/v1/answers", b'{"question": "q?", "max_seconds": 1e400}', "max_seconds"),
    ("/v1/answers", b'{"question": "q?", "question": 5}', "question"),
    ("/v1/answers", b"[" * 5_000 + b"]" * 5_000, "body"),
    ("/v1/answers", b"", "body"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "stream": "yes"}, "stream"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": "5"}, "max_tokens"),
    ("/v1/chat/completions", {"messages": [{"role": 1, "content": "hi"}]}, "role"),
]


@pytest.mark.parametrize(("path", "body", "where"), LAX)
def test_request_types_are_strict(server: LiveServer, path: str, body: dict[str, Any] | bytes, where: str) -> None:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    with server.client(STAFF_KEY) as http:
        _error(_post(http, path, raw), 400, where)


def test_only_utf8_json_is_read(server: LiveServer) -> None:
    body = json.dumps({"question": QUESTION})
    with server.client(STAFF_KEY) as http:
        _error(_post(http, "/v1/answers", body.encode("utf-16")), 400, "not UTF-8")
        _error(_post(http, "/v1/answers", body.encode("utf-16-le")), 400)
        _error(_post(http, "/v1/answers", body.encode(), "application/json; charset=utf-16"), 415, "UTF-8")
        ok = _post(http, "/v1/answers", body.encode(), "application/json; charset=UTF-8")
    assert ok.status_code == 200, ok.text


def test_filter_errors_do_not_list_the_index_fields(server: LiveServer) -> None:
    with server.client(STAFF_KEY) as http:
        reply = http.post("/v1/answers", json={"question": QUESTION, "filters": ["salary_band=a"]})
    message = _error(reply, 400, "unknown filter field 'salary_band'")
    assert "acl" not in message and "year" not in message


def test_served_traces_carry_no_scores_but_the_operator_trace_does(
    server: LiveServer, operator_traces: MemoryTracer
) -> None:
    with server.client(STAFF_KEY) as http:
        answer = http.post("/v1/answers", json={"question": QUESTION}).json()
        served = http.get(f"/v1/traces/{answer['trace_id']}").json()
    hits = [hit for step in served["steps"] for hit in step["retrieved"]]
    assert hits and all(set(hit) == {"id", "title", "text"} for hit in hits)
    assert "score" not in json.dumps(served)
    kept = [hit for step in operator_traces.traces[-1].steps for hit in step.retrieved]
    assert [h.id for h in kept] == [h["id"] for h in hits] and all(h.score > 0 for h in kept)


def test_a_leading_byte_order_mark_is_ignored(server: LiveServer) -> None:
    """RFC 8259 lets a parser ignore a UTF-8 BOM; some Windows tools write one."""
    bom = b"\xef\xbb\xbf"
    with server.client(STAFF_KEY) as http:
        answer = _post(http, "/v1/answers", bom + json.dumps({"question": QUESTION}).encode())
        chat = _post(http, "/v1/chat/completions",
                     bom + json.dumps({"messages": [{"role": "user", "content": QUESTION}]}).encode())  # fmt: skip
        twice = _post(http, "/v1/answers", bom + bom + json.dumps({"question": QUESTION}).encode())
    assert answer.status_code == 200 and answer.json()["answer"]
    assert chat.status_code == 200 and chat.json()["choices"][0]["message"]["content"]
    _error(twice, 400, "invalid request")  # only one is a byte-order mark; the second is junk
