"""Admission: a burst above the slot count waits in a bounded queue instead of getting 429.

The model is a parrot behind a gate the test opens (:class:`GatedLM`), so which request holds a
slot and which waits is decided by the test, never by a clock.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from flare.config import Settings
from flare.engine.loop import Flare
from flare.engine.prompts import PromptTemplate
from flare.retrieve.tantivy_index import TantivyRetriever
from flare.server import Limits, create_app
from flare.server.admission import AnswerRate, Gate
from flare.server.errors import ApiError
from tests.server.support import STAFF_KEY, GatedLM, LiveServer, keys, sse_events, wait_until

QUESTION = "How are travel expenses reimbursed after receipts?"


@pytest.fixture()
def lm() -> Iterator[GatedLM]:
    lm = GatedLM()
    yield lm
    lm.gate.set()  # never leave a worker waiting


def _serve(index_dir: Path, lm: GatedLM, **limits: Any) -> LiveServer:
    engine = Flare(lm, TantivyRetriever(index_dir), Settings(theta=0.5, max_sentences=2),
                   template=PromptTemplate.plain())  # fmt: skip
    return LiveServer(create_app(engine, keys(), Limits(heartbeat_seconds=0.2, **limits)))


def _health(http: httpx.Client) -> dict[str, Any]:
    data: dict[str, Any] = http.get("/healthz").json()
    return data


def _metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


class Streamer(threading.Thread):
    """A streaming request in a thread: its events, and its status, once it has ended."""

    def __init__(self, url: str, question: str = QUESTION) -> None:
        super().__init__(daemon=True)
        self.url, self.question = url, question
        self.status = 0
        self.raw = b""
        self.first_event = threading.Event()

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {STAFF_KEY}"}
        body = {"question": self.question, "stream": True}
        with httpx.Client(base_url=self.url, headers=headers, timeout=120) as http, \
                http.stream("POST", "/v1/answers", json=body) as r:  # fmt: skip
            self.status = r.status_code
            for chunk in r.iter_raw():
                self.raw += chunk
                if b"event: " in self.raw:
                    self.first_event.set()
        self.first_event.set()

    def events(self) -> list[tuple[str | None, str]]:
        return sse_events(self.raw)


def test_a_burst_waits_and_is_served_and_beyond_the_queue_is_429(index_dir: Path, lm: GatedLM) -> None:
    with _serve(index_dir, lm, max_concurrency=1, max_queue=2) as live, live.client(STAFF_KEY) as http:
        first = Streamer(live.url)
        first.start()
        wait_until(lambda: _health(http)["in_flight"] == 1, "the first answer took the slot")
        second = Streamer(live.url)
        second.start()
        assert second.first_event.wait(30)
        assert second.events()[0][0] == "queued" and '"position": 1' in second.events()[0][1]
        third: dict[str, Any] = {}
        json_thread = threading.Thread(
            target=lambda: third.update(r=httpx.post(f"{live.url}/v1/answers", json={"question": QUESTION},
                                                     headers={"Authorization": f"Bearer {STAFF_KEY}"}, timeout=120)),
            daemon=True,
        )  # fmt: skip
        json_thread.start()
        wait_until(lambda: _health(http)["queue_depth"] == 2, "two requests wait")
        refused = http.post("/v1/answers", json={"question": QUESTION})
        metrics_busy = http.get("/metrics").text
        lm.gate.set()
        for t in (first, second, json_thread):
            t.join(120)
        metrics = http.get("/metrics").text
        health = _health(http)
    assert refused.status_code == 429 and refused.headers["retry-after"] == "1"  # no answer measured yet
    assert "2 waiting (limit 2)" in refused.json()["error"]["message"]
    assert first.events()[-1][0] == second.events()[-1][0] == "done"
    assert [e for e, _ in first.events()].count("queued") == 0
    assert third["r"].status_code == 200 and third["r"].json()["answer"]
    assert _metric(metrics_busy, "flare_slots_in_use") == 1 and _metric(metrics_busy, "flare_queue_depth") == 2
    assert _metric(metrics, "flare_queue_waits_total") == 2
    assert _metric(metrics, "flare_queue_wait_seconds_count") == 2
    assert 'flare_rejected_total{reason="queue_full"} 1' in metrics
    assert _metric(metrics, "flare_slots_in_use") == 0 and _metric(metrics, "flare_queue_depth") == 0
    assert health["in_flight"] == 0 and health["queue_depth"] == 0 and health["max_queue"] == 2


def test_waiting_clients_that_leave_give_up_their_place(index_dir: Path, lm: GatedLM) -> None:
    with _serve(index_dir, lm, max_concurrency=1, max_queue=4) as live, live.client(STAFF_KEY) as http:
        holder = Streamer(live.url)
        holder.start()
        wait_until(lambda: _health(http)["in_flight"] == 1, "the first answer took the slot")
        with http.stream("POST", "/v1/answers", json={"question": QUESTION, "stream": True}) as s:
            for line in s.iter_lines():
                if line.startswith("event: queued"):
                    break  # leave while waiting
        with pytest.raises(httpx.ReadTimeout):
            http.post("/v1/answers", json={"question": QUESTION}, timeout=0.3)  # a JSON client that gives up
        wait_until(lambda: _health(http)["queue_depth"] == 0, "the clients that left are out of the queue")
        last = Streamer(live.url)
        last.start()
        assert last.first_event.wait(30)
        position = last.events()[0]
        lm.gate.set()
        holder.join(120)
        last.join(120)
        health = _health(http)
    assert position[0] == "queued" and '"position": 1' in position[1]  # not 3: the two leavers are gone
    assert holder.events()[-1][0] == last.events()[-1][0] == "done"
    assert health["in_flight"] == 0 and health["queue_depth"] == 0
    assert lm.calls >= 2  # only the holder and the last request reached the model


def test_a_queue_timeout_is_429_for_json_and_an_error_event_for_streams(index_dir: Path, lm: GatedLM) -> None:
    with _serve(index_dir, lm, max_concurrency=1, max_queue=4, queue_timeout=0.3) as live, \
            live.client(STAFF_KEY) as http:  # fmt: skip
        holder = Streamer(live.url)
        holder.start()
        wait_until(lambda: _health(http)["in_flight"] == 1, "the first answer took the slot")
        timed_out = http.post("/v1/answers", json={"question": QUESTION})
        late = Streamer(live.url)
        late.run()  # in this thread: it ends with the timeout
        lm.gate.set()
        holder.join(120)
        metrics = http.get("/metrics").text
    assert timed_out.status_code == 429 and int(timed_out.headers["retry-after"]) >= 1
    assert "no answer slot came free" in timed_out.json()["error"]["message"]
    events = late.events()
    assert late.status == 200 and [e for e, _ in events] == ["queued", "error"]
    assert '"code": "rate_limit_exceeded"' in events[-1][1]
    assert 'flare_rejected_total{reason="queue_timeout"} 2' in metrics
    assert holder.events()[-1][0] == "done"


def test_a_client_that_hangs_up_and_asks_again_waits_for_its_old_slot(index_dir: Path) -> None:
    """The slot of a cancelled answer frees only when its model call stops; until then the queue
    takes one more waiter for it, so asking again at once is not a 429."""
    lm = GatedLM(deaf=True)
    engine = Flare(lm, TantivyRetriever(index_dir), Settings(theta=0.5, max_sentences=2),
                   template=PromptTemplate.plain())  # fmt: skip
    app = create_app(engine, keys(), Limits(max_concurrency=1, max_queue=0))
    try:
        with LiveServer(app) as live, live.client(STAFF_KEY) as http:
            with http.stream("POST", "/v1/answers", json={"question": QUESTION, "stream": True}) as s:
                assert s.status_code == 200
                wait_until(lambda: _health(http)["in_flight"] == 1, "the answer took the slot")
            gate = app.state.service.gate
            wait_until(lambda: gate.releasing == 1, "the slot is releasing")
            again: dict[str, Any] = {}
            body = {"question": QUESTION}
            thread = threading.Thread(target=lambda: again.update(r=http.post("/v1/answers", json=body)), daemon=True)
            thread.start()
            wait_until(lambda: _health(http)["queue_depth"] == 1, "the new request waits for the old slot")
            third = httpx.post(f"{live.url}/v1/answers", json={"question": QUESTION},
                               headers={"Authorization": f"Bearer {STAFF_KEY}"}, timeout=30)  # fmt: skip
            lm.gate.set()
            thread.join(120)
            assert gate.releasing == 0 and gate.active == 0
    finally:
        lm.gate.set()
    assert third.status_code == 429  # one releasing slot makes room for one waiter, not more
    assert again["r"].status_code == 200 and again["r"].json()["answer"]


def test_the_chat_stream_says_queued_as_a_comment(index_dir: Path, lm: GatedLM) -> None:
    with _serve(index_dir, lm, max_concurrency=1, max_queue=1) as live, live.client(STAFF_KEY) as http:
        holder = Streamer(live.url)
        holder.start()
        wait_until(lambda: _health(http)["in_flight"] == 1, "the first answer took the slot")
        body = {"messages": [{"role": "user", "content": QUESTION}], "stream": True}
        lines: list[str] = []
        with http.stream("POST", "/v1/chat/completions", json=body) as s:
            for line in s.iter_lines():
                lines.append(line)
                if line.startswith(": queued"):
                    lm.gate.set()
        holder.join(120)
    assert "data: [DONE]" in lines and lines.index(": queued position=1 queue_depth=1") < lines.index("data: [DONE]")


def test_answer_rate_gives_retry_after() -> None:
    now = [0.0]
    rate = AnswerRate(window=4, clock=lambda: now[0])
    assert rate.per_second() is None and rate.retry_after(5) == 1
    for t in (0.0, 1.0, 2.0, 3.0):
        now[0] = t
        rate.record()
    now[0] = 4.0  # 4 answers in the 4 s since the oldest kept: 1 per second
    assert rate.per_second() == pytest.approx(1.0)
    assert rate.retry_after(3) == 3 and rate.retry_after(10_000) == 300
    now[0] = 40.0  # nothing finished since: the rate falls, the advice grows
    assert rate.retry_after(3) == 30


def test_gate_hands_slots_to_waiters_in_order_and_drain_refuses() -> None:
    async def scenario() -> None:
        gate = Gate(limit=1, max_queue=2, queue_timeout=60)
        assert gate.try_enter() is None  # a free slot
        a, b = gate.try_enter(), gate.try_enter()
        assert a is not None and b is not None and gate.position(b) == 2
        with pytest.raises(ApiError) as full:
            gate.try_enter()
        assert full.value.status == 429
        assert not await gate.wait(a, 0.01)  # nothing freed yet
        gate.leave()  # the slot goes to a, not to a newcomer
        assert await gate.wait(a, 5) and gate.active == 1 and gate.waiting == 1
        gate.abandon(b)  # b gives up before its turn
        assert gate.waiting == 0
        c = gate.try_enter()
        assert c is not None
        gate.leave()  # granted to c ...
        await asyncio.sleep(0)
        gate.abandon(c)  # ... which left at that moment: the slot is free again, not lost
        assert gate.active == 0
        d = gate.try_enter()
        assert d is None and gate.active == 1
        e = gate.try_enter()
        assert e is not None
        gate.drain(5)
        with pytest.raises(ApiError) as drained:
            await gate.wait(e, 5)
        assert drained.value.status == 503 and drained.value.headers["Retry-After"] in {"4", "5"}
        with pytest.raises(ApiError) as refused:
            gate.try_enter()
        assert refused.value.status == 503

    asyncio.run(scenario())
