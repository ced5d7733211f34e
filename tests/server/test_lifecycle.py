"""``flare serve`` as a process: SIGTERM drains and exits 0, SIGHUP reloads the index.

The model is flare's fake OpenAI-compatible server (a fixed delay per token) on 127.0.0.1,
reached through the real OpenAI backend; ``flare serve`` runs as a child process with a SQLite
trace store, so what the tests read back is what the process wrote before it exited.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import flare
from flare.retrieve.corpus import load_corpus
from flare.retrieve.tantivy_index import build_index
from flare.server.trace_sql import SqliteTraceStore
from flare.testing.fake_openai import FakeOpenAIServer
from tests.server.support import STAFF_KEY, sse_events, wait_until, write_corpus
from tests.server.test_reload import NEW_CORPUS

pytestmark = pytest.mark.slow
QUESTION = "How are travel expenses reimbursed after receipts?"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Serve:
    """``flare serve`` in a child process on a free loopback port."""

    def __init__(self, tmp: Path, lm_url: str, *options: str) -> None:
        self.index = tmp / "idx"
        build_index(load_corpus(write_corpus(tmp / "corpus.jsonl")), self.index)
        keys = tmp / "keys.toml"
        keys.write_text(f'[[keys]]\nkey = "{STAFF_KEY}"\nprincipal = "sam"\ngroups = ["staff"]\n', encoding="utf-8")
        self.traces = tmp / "traces.sqlite"
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        src = str(Path(flare.__file__).resolve().parents[1])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
               "FLARE_THREADS": "1"}  # fmt: skip
        cmd = [sys.executable, "-m", "flare", "serve", "--index", str(self.index), "--keys", str(keys),
               "--port", str(self.port), "--model", f"openai:{lm_url}#fake", "--trace-store",
               f"sqlite:{self.traces}", "--max-sentences", "2", "--verify", "off", *options]  # fmt: skip
        self.log = tmp / "serve.log"
        self._log = self.log.open("wb")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        wait_until(self._ready, "flare serve answered /healthz", seconds=120)

    def _ready(self) -> bool:
        assert self.proc.poll() is None, self.log.read_text()
        try:
            return httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def health(self) -> httpx.Response:
        return httpx.get(f"{self.url}/healthz", timeout=10)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self._log.close()


class Streamer(threading.Thread):
    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.raw = b""
        self.error = ""

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {STAFF_KEY}"}
        try:
            with httpx.stream("POST", f"{self.url}/v1/answers", json={"question": QUESTION, "stream": True},
                              headers=headers, timeout=120) as r:  # fmt: skip
                for chunk in r.iter_raw():
                    self.raw += chunk
        except httpx.HTTPError as err:  # a broken stream is what the drain must never cause
            self.error = repr(err)

    def events(self) -> list[tuple[str | None, str]]:
        return sse_events(self.raw)


@pytest.fixture()
def slow_lm() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(token_delay=0.15) as fake:
        yield fake


def _ended(stream: Streamer) -> tuple[str, dict[str, Any]]:
    assert not stream.error, stream.error
    event, data = stream.events()[-1]
    assert event in ("done", "error"), stream.events()
    return str(event), json.loads(data)


def test_sigterm_drains_answers_in_flight_and_exits_0(tmp_path: Path, slow_lm: FakeOpenAIServer) -> None:
    serve = Serve(tmp_path, slow_lm.url, "--max-concurrency", "2", "--max-queue", "2", "--shutdown-grace", "120")
    try:
        streams = [Streamer(serve.url) for _ in range(4)]
        for s in streams:
            s.start()
        wait_until(lambda: serve.health().json()["queue_depth"] == 2, "two answers run and two wait")
        serve.proc.send_signal(signal.SIGTERM)
        wait_until(lambda: serve.health().status_code == 503, "/healthz says draining")
        health = serve.health().json()
        refused = httpx.post(f"{serve.url}/v1/answers", json={"question": QUESTION},
                             headers={"Authorization": f"Bearer {STAFF_KEY}"}, timeout=10)  # fmt: skip
        code = serve.proc.wait(120)
        for s in streams:
            s.join(60)
    finally:
        serve.close()
    assert code == 0, serve.log.read_text()
    assert health["status"] == "draining"
    assert refused.status_code == 503 and refused.headers["retry-after"].isdigit()
    assert refused.json()["error"]["type"] == "server_shutting_down"
    ended = [_ended(s) for s in streams]
    done = [data for event, data in ended if event == "done"]
    waited = [s for s in streams if s.events()[0][0] == "queued"]
    assert len(done) == 2 and len(waited) == 2  # the two in flight finished within the grace
    for s in waited:  # the two that were waiting were told, cleanly, to come back
        assert s.events()[-1][0] == "error" and "server_shutting_down" in s.events()[-1][1]
    store = SqliteTraceStore(serve.traces)
    try:
        assert all(store.get(d["trace_id"], "sam") is not None for d in done)
    finally:
        store.close()
    log = serve.log.read_text()
    assert '"event": "drained"' in log and "Traceback" not in log


def test_sighup_reloads_and_answers_cut_by_the_grace_end_cleanly(tmp_path: Path, slow_lm: FakeOpenAIServer) -> None:
    serve = Serve(tmp_path, slow_lm.url, "--max-concurrency", "2", "--shutdown-grace", "0.2", "--index-poll", "0")
    try:
        build_index(load_corpus(_new_corpus(tmp_path)), serve.index)  # flare index's swap, polling off
        assert serve.health().json()["index"]["generation"] == 1
        serve.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: serve.health().json()["index"]["generation"] == 2, "SIGHUP reloaded the index")
        streams = [Streamer(serve.url) for _ in range(2)]
        for s in streams:
            s.start()
        wait_until(lambda: all(b"event: " in s.raw for s in streams), "both answers are under way")
        serve.proc.send_signal(signal.SIGTERM)
        code = serve.proc.wait(120)
        for s in streams:
            s.join(60)
    finally:
        serve.close()
    assert code == 0, serve.log.read_text()
    store = SqliteTraceStore(serve.traces)
    cut_count = 0
    try:
        for s in streams:
            event, data = _ended(s)
            if event == "done":  # finished within the 0.2 s: its trace is the engine's
                assert {x["id"] for x in data["sources"]} <= {d["id"] for d in NEW_CORPUS}
                assert store.get(data["trace_id"], "sam") is not None
                continue
            assert data["error"]["type"] == "server_shutting_down"
            trace_id = data["error"]["message"].split("(trace ")[1].split(")")[0]
            cut = store.get(trace_id, "sam")
            assert cut is not None and cut["stop_reason"] == "shutdown" and cut["question"] == QUESTION
            cut_count += 1
    finally:
        store.close()
    assert cut_count >= 1  # an answer takes seconds at 0.15 s per token: the 0.2 s grace cut it
    log = serve.log.read_text()
    assert '"event": "drain_cut"' in log and "Traceback" not in log


def _new_corpus(tmp: Path) -> Path:
    path = tmp / "new.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in NEW_CORPUS), encoding="utf-8")
    return path
