"""O6: concurrent answers do not queue behind one model lock when the backend serves in parallel.

The model is a real OpenAI-compatible HTTP server on 127.0.0.1 (flare.testing's fake, with a
fixed delay per token) reached through the real OpenAI backend; the fake counts how many
requests it served at once. No wall-clock thresholds: concurrency is read from that count.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from flare.config import Settings
from flare.engine.loop import Flare
from flare.lm.base import parallel_calls
from flare.lm.openai_http import OpenAIHTTPModel
from flare.retrieve.tantivy_index import TantivyRetriever
from flare.server import Limits, create_app
from flare.server.runner import Cancelled, SharedLM
from flare.testing.fake_openai import FakeOpenAIServer
from flare.testing.scripted import ScriptedLM
from tests.server.support import STAFF_KEY, LiveServer, ParrotLM, keys

QUESTIONS = [
    "How are travel expenses reimbursed after receipts?",
    "When is a laptop replaced?",
    "Who approves trips before departure?",
    "What did the 2025 travel policy say?",
]


@pytest.fixture()
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(token_delay=0.01) as server:
        yield server


def _serve(index_dir: Path, fake: FakeOpenAIServer, max_parallel: int) -> LiveServer:
    lm = OpenAIHTTPModel(fake.url, "fake", max_parallel=max_parallel, logprobs=True)
    engine = Flare(lm, TantivyRetriever(index_dir), Settings(theta=0.5, max_sentences=3))
    return LiveServer(create_app(engine, keys(), Limits(max_concurrency=8, max_sentences=3)))


def _ask_all(live: LiveServer, questions: list[str], at_once: bool) -> list[dict[str, Any]]:
    """Answers to ``questions``, asked one after another or all at the same time."""
    results: list[dict[str, Any]] = [{} for _ in questions]

    def ask(i: int) -> None:
        with live.client(STAFF_KEY) as http:
            response = http.post("/v1/answers", json={"question": questions[i]})
            assert response.status_code == 200, response.text
            results[i] = response.json()

    if not at_once:
        for i in range(len(questions)):
            ask(i)
        return results
    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(questions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert all(results), "an answer did not come back"
    return results


def test_concurrent_answers_run_in_parallel_and_match_sequential(index_dir: Path, fake: FakeOpenAIServer) -> None:
    with _serve(index_dir, fake, max_parallel=4) as live:
        sequential = _ask_all(live, QUESTIONS, at_once=False)
        assert fake.stats()["peak_in_flight"] == 1
        concurrent = _ask_all(live, QUESTIONS, at_once=True)
        with live.client(STAFF_KEY) as http:
            health = http.get("/healthz").json()
            # Each answer's trace is its own: the trace of answer i holds question i.
            traces = [http.get(f"/v1/traces/{a['trace_id']}").json() for a in concurrent]
    assert fake.stats()["peak_in_flight"] >= 2, "the answers' LM calls never overlapped"
    assert health["lm_parallel"] == 4
    assert [a["answer"] for a in concurrent] == [a["answer"] for a in sequential]
    assert [a["sources"] for a in concurrent] == [a["sources"] for a in sequential]
    assert all(a["sentences"] and a["retrievals"] >= 1 for a in concurrent)
    assert [t["question"] for t in traces] == QUESTIONS
    assert len({a["trace_id"] for a in concurrent}) == len(QUESTIONS)


def test_max_parallel_bounds_the_calls_in_flight(index_dir: Path, fake: FakeOpenAIServer) -> None:
    with _serve(index_dir, fake, max_parallel=2) as live:
        _ask_all(live, QUESTIONS, at_once=True)
    assert fake.stats()["peak_in_flight"] == 2


def test_disconnect_stops_the_remote_generation(index_dir: Path) -> None:
    with FakeOpenAIServer(token_delay=0.05) as slow, _serve(index_dir, slow, max_parallel=4) as live:
        with live.client(STAFF_KEY) as http:
            with http.stream("POST", "/v1/answers", json={"question": QUESTIONS[0], "stream": True}) as s:
                for line in s.iter_lines():
                    if line.startswith("event: sentence"):
                        break  # leave while the next sentence is being drafted
            deadline = time.monotonic() + 10
            while http.get("/healthz").json()["in_flight"]:
                assert time.monotonic() < deadline, "the answer kept running after the client left"
                time.sleep(0.05)
            metrics = http.get("/metrics").text
        before = slow.stats()
        time.sleep(0.5)  # ten tokens' time: a stream still open would have sent more
        after = slow.stats()
    assert after["tokens"] == before["tokens"] and after["in_flight"] == 0
    assert "flare_cancelled_total 1" in metrics


def test_in_process_models_still_take_one_call_at_a_time(index_dir: Path) -> None:
    """A model without ``max_parallel`` (llama.cpp in-process) is never entered by two threads."""

    class Counting(ParrotLM):
        def __init__(self) -> None:
            super().__init__()
            self.now = self.peak = 0
            self._lock = threading.Lock()

        def complete(self, prompt: str, **kw: Any) -> Any:
            with self._lock:
                self.now += 1
                self.peak = max(self.peak, self.now)
            try:
                time.sleep(0.01)
                return super().complete(prompt, **kw)
            finally:
                with self._lock:
                    self.now -= 1

    lm = Counting()
    assert parallel_calls(lm) == 1
    engine = Flare(lm, TantivyRetriever(index_dir), Settings(theta=0.5, max_sentences=2, trigger="min"))
    with LiveServer(create_app(engine, keys(), Limits(max_concurrency=8))) as live:
        answers = _ask_all(live, QUESTIONS, at_once=True)
        health = httpx.get(f"{live.url}/healthz").json()
    assert lm.peak == 1 and len(lm.prompts) >= 2 * len(QUESTIONS)
    assert all(a["answer"] for a in answers) and health["lm_parallel"] == 1


def test_parallel_calls_reads_the_capability() -> None:
    class Declares:
        max_parallel = 6

    class Nonsense:
        max_parallel = True

    assert parallel_calls(Declares()) == 6
    assert parallel_calls(object()) == 1
    assert parallel_calls(Nonsense()) == 1
    assert parallel_calls(OpenAIHTTPModel("http://127.0.0.1:9/v1", max_parallel=3)) == 3


def test_scoring_goes_through_the_shared_model() -> None:
    """The support checker's ``score`` reaches the backend under the same slots and cancellation."""
    lm = ScriptedLM([("Search results", ScriptedLM.sentence(" Paris is the capital."))])
    cancel = threading.Event()
    shared = SharedLM(lm, threading.BoundedSemaphore(1), cancel)
    assert shared.supports_scoring
    scored = shared.score("Search results: ...\nAnswer:", " Paris is the capital.")
    assert scored.text == " Paris is the capital." and lm.scored
    cancel.set()
    with pytest.raises(Cancelled):
        shared.score("Search results: ...\nAnswer:", " Paris")
    assert not SharedLM(ParrotLM(), threading.BoundedSemaphore(1), cancel).supports_scoring
