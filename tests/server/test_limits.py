"""Operational limits: budgets, body size, concurrency, cancellation, metrics, logs, errors."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from flare.config import Settings
from flare.engine.loop import Flare
from flare.engine.prompts import PromptTemplate
from flare.retrieve.tantivy_index import TantivyRetriever
from flare.server import Limits, create_app
from flare.server.logs import JsonFormatter
from tests.server.support import STAFF_KEY, LiveServer, SlowLM, keys, sse_events

QUESTION = "How are travel expenses reimbursed after receipts?"


def _serve(index_dir: Path, lm: SlowLM, limits: Limits) -> LiveServer:
    # The parrot recites passages, and the adversarial ones repeat themselves on purpose: loop
    # cutting (repeat_ngram) would shorten what these tests inspect.
    engine = Flare(lm, TantivyRetriever(index_dir), Settings(theta=0.5, max_sentences=4, repeat_ngram=0),
                   template=PromptTemplate.plain())  # fmt: skip
    return LiveServer(create_app(engine, keys(), limits))


@pytest.fixture()
def slow() -> SlowLM:
    return SlowLM(delay=0.02)


@pytest.fixture()
def server(index_dir: Path, slow: SlowLM) -> Iterator[LiveServer]:
    limits = Limits(max_concurrency=1, max_queue=0, max_body_bytes=2_000, max_sentences=3, heartbeat_seconds=0.2)
    with _serve(index_dir, slow, limits) as live:
        yield live


def _wait_idle(http: httpx.Client, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while http.get("/healthz").json()["in_flight"]:
        assert time.monotonic() < deadline, "the answer kept running after the client left"
        time.sleep(0.05)


def test_budgets_lower_but_never_raise(server: LiveServer) -> None:
    with server.client(STAFF_KEY) as http:
        one = http.post("/v1/answers", json={"question": QUESTION, "max_sentences": 1}).json()
        big = http.post("/v1/answers", json={"question": QUESTION, "max_sentences": 100,
                                             "max_seconds": 1e9}).json()  # fmt: skip
        bad = http.post("/v1/answers", json={"question": QUESTION, "max_seconds": 0})
        bad_chat = http.post("/v1/chat/completions",
                             json={"messages": [{"role": "user", "content": "hi"}], "n": 2})  # fmt: skip
    assert len(one["sentences"]) == 1 and one["budgets"]["max_sentences"] == 1
    assert one["stop_reason"] == "max_sentences"
    assert big["budgets"]["max_sentences"] == 3 and big["budgets"]["max_seconds"] == 60.0
    assert bad.status_code == 400 and "max_seconds" in bad.json()["error"]["message"]
    assert bad_chat.status_code == 400


def test_request_size_limit_is_413(server: LiveServer) -> None:
    big = {"question": "x" * 3_000}
    with server.client(STAFF_KEY) as http:
        declared = http.post("/v1/answers", json=big)
        chunked = http.post("/v1/answers", content=iter([json.dumps(big).encode()]),
                            headers={"Content-Type": "application/json"})  # fmt: skip
    assert declared.status_code == chunked.status_code == 413
    assert declared.json()["error"]["type"] == "request_too_large"


def test_concurrency_limit_is_a_clear_429(server: LiveServer, slow: SlowLM) -> None:
    with server.client(STAFF_KEY) as http:
        with http.stream("POST", "/v1/answers", json={"question": QUESTION, "stream": True}) as s:
            assert s.status_code == 200
            busy = http.post("/v1/answers", json={"question": QUESTION})
            assert busy.status_code == 429
            assert busy.headers["retry-after"] == "1"
            assert "busy" in busy.json()["error"]["message"]
            events = sse_events(b"".join(s.iter_raw()))
        assert events[-1][0] == "done"
        _wait_idle(http)
        assert http.post("/v1/answers", json={"question": QUESTION}).status_code == 200
        assert 'flare_rejected_total{reason="concurrency"} 1' in http.get("/metrics").text


def test_disconnect_cancels_a_stream(server: LiveServer, slow: SlowLM) -> None:
    with server.client(STAFF_KEY) as http:
        with http.stream("POST", "/v1/answers", json={"question": QUESTION, "stream": True}) as s:
            for line in s.iter_lines():
                if line.startswith("event: searching"):
                    break  # leave while the model is generating
        _wait_idle(http)
        tokens = slow.tokens
        time.sleep(0.3)
        assert slow.tokens == tokens, "the model kept generating for a client that left"
        assert "flare_cancelled_total 1" in http.get("/metrics").text


def test_disconnect_cancels_a_json_request(server: LiveServer, slow: SlowLM) -> None:
    with server.client(STAFF_KEY) as http:
        with pytest.raises(httpx.ReadTimeout):
            http.post("/v1/answers", json={"question": QUESTION}, timeout=0.3)
        _wait_idle(http)
        tokens = slow.tokens
        time.sleep(0.3)
        assert slow.tokens == tokens


def test_metrics_expose_trigger_rate_stages_and_latency(server: LiveServer) -> None:
    with server.client(STAFF_KEY) as http:
        for _ in range(2):
            assert http.post("/v1/answers", json={"question": QUESTION}).status_code == 200
        text = http.get("/metrics").text
        health = http.get("/healthz").json()
    values = dict(line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))
    assert float(values["flare_sentences_total"]) >= 2
    rate = float(values["flare_trigger_rate"])
    assert rate == pytest.approx(
        float(values["flare_sentences_retrieved_total"]) / float(values["flare_sentences_total"])
    )
    assert float(values["flare_retrievals_total"]) >= 2 and float(values["flare_lm_calls_total"]) >= 2
    assert values["flare_answer_seconds_count"] == "2"
    assert 'flare_stage_seconds_count{stage="generate"}' in values
    assert 'flare_stage_seconds_count{stage="retrieve"}' in values
    assert 'flare_http_requests_total{route="/v1/answers",status="200"}' in values
    assert health["status"] == "ok" and health["in_flight"] == 0


def test_client_errors_are_400_with_a_message(server: LiveServer) -> None:
    with server.client(STAFF_KEY) as http:
        not_json = http.post("/v1/answers", content=b"{nope", headers={"Content-Type": "application/json"})
        unknown = http.post("/v1/answers", json={"question": QUESTION, "filters": ["colour=red"]})
        malformed = http.post("/v1/answers", json={"question": QUESTION, "filters": ["year=="]})
        empty = http.post("/v1/answers", json={"question": ""})
        blank = http.post("/v1/answers", json={"question": "   ", "stream": True})
        no_user = http.post("/v1/chat/completions", json={"messages": [{"role": "system", "content": "x"}]})
    for r in (not_json, unknown, malformed, empty, blank, no_user):
        assert r.status_code == 400, r.text
        assert r.json()["error"]["message"]
    assert "colour" in unknown.json()["error"]["message"]


def test_logs_are_json_without_questions_or_keys(server: LiveServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="flare.server")
    with server.client(STAFF_KEY) as http:
        http.post("/v1/answers", json={"question": QUESTION})
    lines = [json.loads(JsonFormatter().format(r)) for r in caplog.records]
    requests = [x for x in lines if x.get("event") == "request"]
    answers = [x for x in lines if x.get("event") == "answer"]
    assert requests and requests[-1]["route"] == "/v1/answers" and requests[-1]["status"] == 200
    assert requests[-1]["principal"] == "sam" and requests[-1]["request_id"]
    assert answers and answers[-1]["outcome"] == "finished" and answers[-1]["trace_id"]
    dumped = json.dumps(lines)
    assert QUESTION not in dumped and STAFF_KEY not in dumped


def test_viewer_is_served_with_a_strict_csp(server: LiveServer) -> None:
    with server.client() as http:
        page = http.get("/viewer/")
        js = http.get("/viewer/viewer.js")
        redirect = http.get("/viewer", follow_redirects=False)
        other = http.get("/viewer/../app.py")
    assert page.status_code == 200 and "viewer.js" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert js.headers["content-type"].startswith("text/javascript")
    assert redirect.status_code == 308
    assert other.status_code == 404
