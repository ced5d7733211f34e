"""Concurrent answers on a real llama.cpp server with parallel slots (xllamacpp, SmolLM2).

The model backend is llama.cpp's own server in-process, reached through flare's OpenAI-compatible
client; a thin counter around it records how many LM calls were in flight at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from flare.config import Settings
from flare.engine.loop import Flare
from flare.lm.base import StopWhen
from flare.lm.llama_server import LlamaServerModel
from flare.lm.registry import resolve_model
from flare.retrieve.tantivy_index import TantivyRetriever
from flare.server import Limits, create_app
from flare.types import Completion
from tests.server.support import CORPUS, STAFF_KEY, LiveServer, keys

pytestmark = pytest.mark.model
STAFF_IDS = {d["id"] for d in CORPUS if "staff" in d["meta"]["acl"]}
QUESTIONS = ["How are travel expenses reimbursed after receipts?", "When is a laptop replaced?"]


class Overlap:
    """Forwards to a model and records the most calls that were inside it at once."""

    def __init__(self, lm: LlamaServerModel) -> None:
        self.lm = lm
        self.name, self.max_parallel = lm.name, lm.max_parallel
        self.supports_logprobs, self.supports_logit_bias = True, True
        self.chat_template = lm.chat_template
        self.now = self.peak = 0
        self._lock = threading.Lock()

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int,
        stop: Sequence[str] = (),
        stop_when: StopWhen | None = None,
        logit_bias: Mapping[str, float] | None = None,
    ) -> Completion:
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        try:
            return self.lm.complete(prompt, max_tokens=max_tokens, stop=stop, stop_when=stop_when,
                                    logit_bias=logit_bias)  # fmt: skip
        finally:
            with self._lock:
                self.now -= 1

    def count_tokens(self, text: str) -> int:
        return self.lm.count_tokens(text)


@pytest.fixture(scope="module")
def overlap() -> Iterator[Overlap]:
    lm = resolve_model("xllamacpp:smollm2", n_threads=1, max_parallel=2, n_ctx=2048)
    assert isinstance(lm, LlamaServerModel)
    with lm:
        yield Overlap(lm)


@pytest.fixture(scope="module")
def server(index_dir: Path, overlap: Overlap) -> Iterator[LiveServer]:
    engine = Flare(overlap, TantivyRetriever(index_dir), Settings(max_sentences=2))
    with LiveServer(create_app(engine, keys(), Limits(max_sentences=2))) as live:
        yield live


def test_concurrent_answers_share_the_slots(server: LiveServer, overlap: Overlap) -> None:
    answers: dict[int, dict[str, object]] = {}

    def ask(i: int) -> None:
        with server.client(STAFF_KEY) as http:
            answers[i] = http.post("/v1/answers", json={"question": QUESTIONS[i]}).json()

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert overlap.peak == 2, "the two answers' LM calls never ran at the same time"
    for i in range(2):
        answer = answers[i]
        assert answer["answer"] and answer["sentences"], answer
        assert {s["id"] for s in answer["sources"]} <= STAFF_IDS  # type: ignore[attr-defined]
    with server.client(STAFF_KEY) as http:
        trace = http.get(f"/v1/traces/{answers[1]['trace_id']}").json()
        assert http.get("/healthz").json()["lm_parallel"] == 2
    assert trace["question"] == QUESTIONS[1] and trace["lm_tokens_evaluated"] > 0


def test_disconnect_frees_the_slot(server: LiveServer) -> None:
    with server.client(STAFF_KEY) as http:
        with http.stream("POST", "/v1/answers", json={"question": QUESTIONS[0], "stream": True}) as s:
            for line in s.iter_lines():
                if line.startswith("event: searching"):
                    break
        deadline = time.monotonic() + 30
        while http.get("/healthz").json()["in_flight"]:
            assert time.monotonic() < deadline, "the answer kept running after the client left"
            time.sleep(0.05)
        assert "flare_cancelled_total 1" in http.get("/metrics").text
        after = http.post("/v1/answers", json={"question": QUESTIONS[1]})
    assert after.status_code == 200 and after.json()["answer"]
