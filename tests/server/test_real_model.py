"""The real server with a real bundled model (SmolLM2-135M, the fastest) and a real tantivy index.

Few and short on purpose: the model runs at about 100 tokens/s on two shared cores.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from flare.config import Settings
from flare.engine.loop import Flare
from flare.lm.llama import LlamaCppModel
from flare.retrieve.tantivy_index import TantivyRetriever
from flare.server import Limits, create_app
from flare.server.sse import SSE_VERSION
from tests.server.support import (
    CORPUS,
    FINANCE_KEY,
    SECRETS,
    STAFF_KEY,
    LiveServer,
    keys,
    sse_events,
)

pytestmark = pytest.mark.model

STAFF_IDS = {d["id"] for d in CORPUS if "staff" in d["meta"]["acl"]}
QUESTION = "How are travel expenses reimbursed after receipts?"


@pytest.fixture(scope="module")
def server(index_dir: Path, smollm2: LlamaCppModel) -> Iterator[LiveServer]:
    # One sentence per answer keeps each request to one retrieval and one short generation;
    # identical prompts then hit the model's prefix cache.
    engine = Flare(smollm2, TantivyRetriever(index_dir), Settings(max_sentences=1))
    with LiveServer(create_app(engine, keys(), Limits(max_sentences=1))) as live:
        yield live


def test_json_and_sse_answers(server: LiveServer) -> None:
    with server.client(STAFF_KEY) as http:
        answer = http.post("/v1/answers", json={"question": QUESTION}).json()
        with http.stream("POST", "/v1/answers", json={"question": QUESTION, "stream": True}) as s:
            events = sse_events(b"".join(s.iter_raw()))
        trace = http.get(f"/v1/traces/{answer['trace_id']}").json()
    assert len(answer["sentences"]) == 1 and answer["answer"]
    assert {s["id"] for s in answer["sources"]} <= STAFF_IDS
    assert trace["version"] == "flare.trace/1" and trace["model"] == "smollm2"
    assert trace["steps"][0]["retrieved"] and trace["steps"][0]["timings"]
    kinds = [e for e, _ in events]
    assert kinds[-1] == "done" and "sentence" in kinds and kinds[0] == "searching"
    payloads = [json.loads(d) for _, d in events]
    assert all(p["v"] == SSE_VERSION for p in payloads)
    streamed = [p["text"] for e, p in zip(kinds, payloads, strict=True) if e == "sentence"]
    assert streamed == [s["text"] for s in payloads[-1]["sentences"]]
    for body in (json.dumps(answer), json.dumps(payloads), json.dumps(trace)):
        assert not [x for x in SECRETS if x in body]


def test_official_openai_client(server: LiveServer) -> None:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=STAFF_KEY, max_retries=0)
    assert [m.id for m in client.models.list()] == ["smollm2"]
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": QUESTION}]
    done = client.chat.completions.create(model="smollm2", messages=messages)
    content = done.choices[0].message.content
    assert content and done.choices[0].finish_reason in {"stop", "length"}
    stream = client.chat.completions.create(model="smollm2", messages=messages, stream=True, max_tokens=48)
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.strip() and chunks[-1].choices[0].finish_reason in {"stop", "length"}
    assert not [x for x in SECRETS if x in content + text]


def test_finance_key_sees_finance_passages(server: LiveServer) -> None:
    """The same question over the same index: finance may cite what staff never sees."""
    with server.client(FINANCE_KEY) as http:
        answer = http.post("/v1/answers", json={"question": QUESTION}).json()
        trace = http.get(f"/v1/traces/{answer['trace_id']}").json()
    retrieved = {r["id"] for r in trace["steps"][0]["retrieved"]}
    assert retrieved & {"salary-bands-2026", "bonus-finance-2026"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_flare_serve_command(index_dir: Path, tmp_path: Path) -> None:
    """`flare serve` end to end: TOML key file, real index, the default model (Qwen2.5-1.5B), one OpenAI call."""
    keyfile = tmp_path / "keys.toml"
    keyfile.write_text(f'[[keys]]\nkey = "{STAFF_KEY}"\nprincipal = "sam"\ngroups = ["staff"]\n', encoding="utf-8")
    port = _free_port()
    cmd = [sys.executable, "-c", "from flare.cli.serve_cmd import serve; serve()",
           "--index", str(index_dir), "--keys", str(keyfile), "--port", str(port),
           "--threads", "1", "--max-sentences", "1", "--log-level", "warning"]  # fmt: skip
    state = tmp_path / "state"  # the default trace store lives under $XDG_STATE_HOME
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONWARNINGS": "ignore", "XDG_STATE_HOME": str(state)})  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "flare serve did not start"
            time.sleep(0.2)
        client = openai.OpenAI(base_url=f"{url}/v1", api_key=STAFF_KEY, max_retries=0)
        done = client.chat.completions.create(model="qwen1.5b", messages=[{"role": "user", "content": QUESTION}])
        assert done.choices[0].message.content and done.model == "qwen1.5b"
        assert httpx.get(f"{url}/v1/models").status_code == 401
        trace_id = (done.model_extra or {})["flare"]["trace_id"]
        trace = httpx.get(f"{url}/v1/traces/{trace_id}", headers={"Authorization": f"Bearer {STAFF_KEY}"})
        assert trace.status_code == 200 and trace.json()["question"] == QUESTION
        assert (state / "flare" / "traces.sqlite").is_file()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stdout:
            proc.stdout.close()
