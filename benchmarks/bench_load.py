"""Load-test the flare server: N concurrent streaming clients, a fixed number of requests.

Starts a server in a child process on 127.0.0.1 (a free port), indexes the bundled example
handbook (or uses ``--index``), then runs ``--clients`` concurrent clients that each stream
``POST /v1/answers`` (server-sent events) until ``--requests`` answers were asked for in all.
Prints throughput, latency p50/p95 (to the ``done`` event), time to the first sentence,
errors and refusals, and the server's peak memory (VmHWM: peak resident set size).

Bounded in count (``--requests``) and time (``--timeout`` for the whole run); it only ever
talks to 127.0.0.1. ``--lm fake`` swaps the model for an instant scripted one, which measures
the serving layer alone.

Usage::

    .venv/bin/python benchmarks/bench_load.py [--clients 4] [--requests 16] [--max-sentences 2]
        [--threads 2] [--lm smollm2|fake] [--max-concurrency 8] [--timeout 600] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

import httpx

from flare.evaluate.metrics import percentile

KEY = "sk-bench-0123456789abcdefghij"
EXAMPLES = files("flare") / "data" / "examples"


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    first_sentence: list[float] = field(default_factory=list)
    sentences: int = 0
    errors: list[str] = field(default_factory=list)
    refused: int = 0  # 429: the concurrency limit answered


# ------------------------------------------------------------------ server (child process)


def serve(args: argparse.Namespace) -> None:
    """Run the server in this process (the child started by :func:`main`)."""
    import uvicorn

    from flare.config import Settings
    from flare.engine.loop import Flare
    from flare.lm.base import LanguageModel
    from flare.retrieve.tantivy_index import TantivyRetriever
    from flare.server import KeyStore, Limits, create_app
    from flare.server.logs import configure

    settings = Settings(max_sentences=args.max_sentences)
    if args.lm == "fake":
        from flare.testing.scripted import ScriptedLM

        reply = ScriptedLM.sentence(" Travel expenses are reimbursed within ten working days. And")
        lm: LanguageModel = ScriptedLM([(lambda p: True, reply)], name="fake")
    else:
        from flare.lm.registry import resolve_model

        lm = resolve_model(args.lm, n_threads=args.threads)
    engine = Flare(lm, TantivyRetriever(args.index), settings)
    keys = KeyStore.from_config({"keys": [{"key": KEY, "principal": "bench", "groups": ["staff"]}]})
    limits = Limits(max_concurrency=args.max_concurrency, max_sentences=args.max_sentences)
    configure("warning")
    uvicorn.run(create_app(engine, keys, limits), host="127.0.0.1", port=args.port,
                log_level="warning", access_log=False)  # fmt: skip


# ------------------------------------------------------------------ clients


async def one(http: httpx.AsyncClient, question: str, tally: Tally) -> None:
    started = time.perf_counter()
    first: float | None = None
    event = ""
    try:
        async with http.stream("POST", "/v1/answers", json={"question": question, "stream": True}) as r:
            if r.status_code == 429:
                tally.refused += 1
                await r.aread()
                return
            if r.status_code != 200:
                tally.errors.append(f"HTTP {r.status_code}: {(await r.aread())[:200]!r}")
                return
            async for line in r.aiter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                    if event == "sentence":
                        tally.sentences += 1
                        first = first or time.perf_counter() - started
                    elif event == "error":
                        tally.errors.append("error event")
        if event != "done":
            tally.errors.append(f"stream ended after {event!r}")
            return
        tally.latencies.append(time.perf_counter() - started)
        if first is not None:
            tally.first_sentence.append(first)
    except httpx.HTTPError as err:
        tally.errors.append(f"{type(err).__name__}: {err}")


async def clients(url: str, questions: list[str], n_clients: int, n_requests: int) -> tuple[Tally, float]:
    tally = Tally()
    todo = iter(range(n_requests))

    async def client() -> None:
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {KEY}"},
                                     timeout=httpx.Timeout(600, connect=10)) as http:  # fmt: skip
            for i in todo:
                await one(http, questions[i % len(questions)], tally)

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(n_clients)))
    return tally, time.perf_counter() - started


# ------------------------------------------------------------------ driver


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def peak_rss_mb(pid: int) -> tuple[float, float]:
    """(current, peak) resident set size of ``pid`` in MiB, from /proc (Linux)."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return values.get("VmRSS", float("nan")), values.get("VmHWM", float("nan"))


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return time.perf_counter() - started
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit("the server did not become ready")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--max-sentences", type=int, default=2)
    parser.add_argument("--max-concurrency", type=int, default=8)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--lm", default="smollm2", help="smollm2, gemma3, a .gguf path, or fake")
    parser.add_argument("--index", type=Path, default=None, help="default: index the example handbook")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds for the whole run")
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON line")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.clients < 1 or args.requests < 1:
        parser.error("--clients and --requests must be at least 1")
    if args.serve:
        serve(args)
        return

    with tempfile.TemporaryDirectory() as tmp:
        if args.index is None:
            from flare.retrieve.corpus import load_corpus
            from flare.retrieve.tantivy_index import build_index

            args.index = Path(tmp) / "index"
            build_index(load_corpus(Path(str(EXAMPLES / "handbook.jsonl"))), args.index)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        cmd = [sys.executable, __file__, "--serve", "--port", str(port), "--index", str(args.index),
               "--lm", args.lm, "--max-sentences", str(args.max_sentences),
               "--max-concurrency", str(args.max_concurrency)]  # fmt: skip
        if args.threads:
            cmd += ["--threads", str(args.threads)]
        proc = subprocess.Popen(cmd, env={**os.environ, "PYTHONWARNINGS": "ignore"})
        try:
            ready = wait_ready(url, proc, timeout=min(120.0, args.timeout))
            questions = [q.strip() for q in (EXAMPLES / "questions.txt").read_text("utf-8").splitlines() if q.strip()]
            _, rss_idle = peak_rss_mb(proc.pid)
            tally, seconds = asyncio.run(
                asyncio.wait_for(clients(url, questions, args.clients, args.requests), args.timeout)
            )
            _, rss_peak = peak_rss_mb(proc.pid)
            server_metrics = httpx.get(f"{url}/metrics", timeout=5).text
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    report(args, tally, seconds, ready, rss_idle, rss_peak, server_metrics)


def report(args: argparse.Namespace, tally: Tally, seconds: float, ready: float, rss_idle: float,
           rss_peak: float, metrics: str) -> None:  # fmt: skip
    values: dict[str, float] = {}
    for line in metrics.splitlines():
        if line and not line.startswith("#") and "{" not in line:
            name, _, value = line.partition(" ")
            values[name] = float(value)
    done = len(tally.latencies)
    figures: dict[str, Any] = {
        "lm": args.lm, "clients": args.clients, "requests": args.requests,
        "max_sentences": args.max_sentences, "completed": done, "errors": len(tally.errors),
        "refused_429": tally.refused, "seconds": round(seconds, 2),
        "answers_per_s": round(done / seconds, 3), "sentences_per_s": round(tally.sentences / seconds, 3),
        "latency_p50_s": round(percentile(tally.latencies, 50), 2),
        "latency_p95_s": round(percentile(tally.latencies, 95), 2),
        "first_sentence_p50_s": round(percentile(tally.first_sentence, 50), 2),
        "first_sentence_p95_s": round(percentile(tally.first_sentence, 95), 2),
        "server_rss_after_start_mib": round(rss_idle, 1), "server_peak_rss_mib": round(rss_peak, 1),
        "startup_s": round(ready, 2), "trigger_rate": values.get("flare_trigger_rate"),
        "lm_calls_per_answer": round(values.get("flare_lm_calls_total", 0) / max(done, 1), 2),
        "retrievals_per_answer": round(values.get("flare_retrievals_total", 0) / max(done, 1), 2),
    }  # fmt: skip
    print(f"flare load test: {args.clients} clients, {args.requests} streaming requests, "
          f"lm={args.lm}, max_sentences={args.max_sentences}")  # fmt: skip
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"  {key:<{width}}  {value}")
    for err in tally.errors[:5]:
        print(f"  error: {err}")
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
