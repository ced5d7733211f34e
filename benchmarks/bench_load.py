"""Load-test the flare server: throughput and latency at 1/2/4/8 concurrent clients, per model.

For every ``--lm`` and every client count it starts fresh processes on 127.0.0.1 (the model
server if the spec needs one, then flare; see ``load_servers.py`` for the specs), runs that many
clients that each stream ``POST /v1/answers`` (server-sent events) ``--per-client`` times, and
stops them. It prints, per row: answers/s, latency p50/p95 (to the ``done`` event), time to the
first sentence, LM tokens evaluated per answer (flare's traces: prompt tokens evaluated plus
generated, so lost prefix reuse shows), errors, and how many answers equal the same question's
answer at 1 client (concurrency must not change an answer). Then the ratios that matter: each
model's throughput against its own at 1 client, and every model against the first ``--lm`` at
the same client count — all from one run. ``--plot FILE.png`` draws throughput vs clients.

Bounded in count (clients x per-client requests) and time (``--timeout`` per row); it only ever
talks to 127.0.0.1.

Usage::

    .venv/bin/python benchmarks/bench_load.py --lm fake-http@1 --lm fake-http@8 --clients 1,2,4,8
    .venv/bin/python benchmarks/bench_load.py --lm gemma3 --lm xllamacpp:gemma3@4 --clients 1,2,4 \\
        --threads 1 --per-client 2 --max-sentences 2 --plot load.png
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
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

import httpx

from flare.evaluate.metrics import percentile
from load_servers import KEY, parse_lm

EXAMPLES = files("flare") / "data" / "examples"
HERE = Path(__file__).resolve().parent


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    first_sentence: list[float] = field(default_factory=list)
    answers: dict[str, set[str]] = field(default_factory=dict)  # question -> answers given
    stop_reasons: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    refused: int = 0  # 429: the concurrency limit answered


# ------------------------------------------------------------------ clients


async def one(http: httpx.AsyncClient, question: str, tally: Tally) -> None:
    started = time.perf_counter()
    first: float | None = None
    event, done = "", None
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
                        first = first or time.perf_counter() - started
                    elif event == "error":
                        tally.errors.append("error event")
                elif line.startswith("data: ") and event == "done":
                    done = json.loads(line[6:])
        if done is None:
            tally.errors.append(f"stream ended after {event!r}")
            return
        tally.latencies.append(time.perf_counter() - started)
        tally.answers.setdefault(question, set()).add(str(done.get("answer", "")))
        reason = str(done.get("stop_reason", ""))
        tally.stop_reasons[reason] = tally.stop_reasons.get(reason, 0) + 1
        if first is not None:
            tally.first_sentence.append(first)
    except httpx.HTTPError as err:
        tally.errors.append(f"{type(err).__name__}: {err}")


async def drive(url: str, questions: list[str], n_clients: int, per_client: int) -> tuple[Tally, float]:
    tally = Tally()
    todo = iter(range(n_clients * per_client))

    async def client() -> None:
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {KEY}"},
                                     timeout=httpx.Timeout(900, connect=10)) as http:  # fmt: skip
            for i in todo:
                await one(http, questions[i % len(questions)], tally)

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(n_clients)))
    return tally, time.perf_counter() - started


# ------------------------------------------------------------------ processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"a benchmark server exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code < 500:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url} did not become ready")


@contextmanager
def child(role: str, ready_path: str, *extra: str) -> Iterator[tuple[str, int]]:
    """Start ``load_servers.py ROLE`` on a free port; yield its root URL and pid; stop it afterwards."""
    port = free_port()
    cmd = [sys.executable, str(HERE / "load_servers.py"), role, "--port", str(port), *extra]
    proc = subprocess.Popen(cmd, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    try:
        root = f"http://127.0.0.1:{port}"
        wait_ready(root + ready_path, proc, timeout=180)
        yield root, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_row(args: argparse.Namespace, lm: str, n_clients: int, questions: list[str]) -> dict[str, Any]:
    spec = parse_lm(lm)
    threads = ["--threads", str(args.threads)] if args.threads else []
    with ExitStack() as stack:
        lm_url: list[str] = []
        if spec.server == "fake":
            root, _ = stack.enter_context(child("fake", "/v1/models", "--token-delay", str(args.token_delay)))
            lm_url = ["--lm-url", root + "/v1"]
        elif spec.server == "llama":
            slots = str(spec.parallel or 4)
            root, _ = stack.enter_context(child("llama", "/health", "--lm", spec.model, "--slots", slots, *threads))
            lm_url = ["--lm-url", root + "/v1"]
        flare, pid = stack.enter_context(child("flare", "/healthz", "--lm", lm, "--index", str(args.index),
                                          "--max-sentences", str(args.max_sentences),
                                          "--max-seconds", str(args.max_seconds), *threads, *lm_url))  # fmt: skip
        tally, seconds = asyncio.run(
            asyncio.wait_for(drive(flare, questions, n_clients, args.per_client), args.timeout)
        )
        metrics = httpx.get(f"{flare}/metrics", timeout=10).text
        rss = peak_rss_mib(pid)
    return {**figures(lm, n_clients, tally, seconds, metrics), "flare_peak_rss_mib": rss}


def peak_rss_mib(pid: int) -> float:
    """Peak resident set size (VmHWM) of ``pid`` in MiB, from /proc (Linux); nan elsewhere."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return float("nan")


def figures(lm: str, n_clients: int, tally: Tally, seconds: float, metrics: str) -> dict[str, Any]:
    values: dict[str, float] = {}
    for line in metrics.splitlines():
        if line and not line.startswith("#") and "{" not in line:
            name, _, value = line.partition(" ")
            values[name] = float(value)
    done = len(tally.latencies)
    return {
        "lm": lm, "clients": n_clients, "completed": done, "errors": len(tally.errors) + tally.refused,
        "seconds": round(seconds, 2), "answers_per_s": round(done / seconds, 4),
        "p50_s": round(percentile(tally.latencies, 50), 2), "p95_s": round(percentile(tally.latencies, 95), 2),
        "first_sentence_p50_s": round(percentile(tally.first_sentence, 50), 2),
        "lm_tokens_per_answer": round(values.get("flare_lm_tokens_evaluated_total", 0) / max(done, 1), 1),
        "lm_calls_per_answer": round(values.get("flare_lm_calls_total", 0) / max(done, 1), 2),
        "answers": {q: sorted(a) for q, a in tally.answers.items()},
        "stop_reasons": tally.stop_reasons,
        "error_samples": tally.errors[:3],
    }  # fmt: skip


# ------------------------------------------------------------------ report


def same_as_one_client(rows: list[dict[str, Any]], row: dict[str, Any]) -> str:
    """How many of this row's questions got exactly the answer they got at 1 client."""
    base = next((r for r in rows if r["lm"] == row["lm"] and r["clients"] == 1), None)
    if base is None:
        return "-"
    asked = [q for q in row["answers"] if q in base["answers"]]
    same = sum(1 for q in asked if row["answers"][q] == base["answers"][q])
    return f"{same}/{len(asked)}"


def report(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    load = os.getloadavg()
    print(f"flare load test: per-client requests {args.per_client}, max_sentences {args.max_sentences}, "
          f"threads {args.threads}, token delay {args.token_delay}s (fake-http), "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cores")  # fmt: skip
    head = ("lm", "clients", "done", "err", "answers/s", "p50 s", "p95 s", "1st sent. p50", "LM tok/ans",
            "same as 1 client", "x own 1 client", f"x {rows[0]['lm']}", "flare RSS MiB", "stop reasons")  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        own = next((x for x in rows if x["lm"] == r["lm"] and x["clients"] == 1), None)
        ref = next((x for x in rows if x["lm"] == rows[0]["lm"] and x["clients"] == r["clients"]), None)
        cells = [r["lm"], r["clients"], r["completed"], r["errors"], r["answers_per_s"], r["p50_s"], r["p95_s"],
                 r["first_sentence_p50_s"], r["lm_tokens_per_answer"], same_as_one_client(rows, r),
                 _ratio(r, own), _ratio(r, ref), r["flare_peak_rss_mib"],
                 " ".join(f"{k}:{v}" for k, v in sorted(r["stop_reasons"].items()))]  # fmt: skip
        print("| " + " | ".join(str(c) for c in cells) + " |")
    for r in rows:
        for sample in r["error_samples"]:
            print(f"  error ({r['lm']}, {r['clients']} clients): {sample}")


def _ratio(row: dict[str, Any], base: dict[str, Any] | None) -> str:
    if base is None or not base["answers_per_s"]:
        return "-"
    return f"{row['answers_per_s'] / base['answers_per_s']:.2f}"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for lm in dict.fromkeys(r["lm"] for r in rows):
        mine = [r for r in rows if r["lm"] == lm]
        ax.plot([r["clients"] for r in mine], [r["answers_per_s"] for r in mine], marker="o", label=lm)
    ax.set_xlabel("concurrent clients")
    ax.set_ylabel("answers / s")
    ax.set_xscale("log", base=2)
    ax.set_title("flare serve: throughput vs clients")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lm", action="append", help="model spec (repeat to compare; see load_servers.py)")
    parser.add_argument("--clients", default="1,2,4,8", help="comma-separated client counts")
    parser.add_argument("--per-client", type=int, default=4, help="answers each client asks for")
    parser.add_argument("--max-sentences", type=int, default=2)
    parser.add_argument("--max-seconds", type=float, default=3600.0,
                        help="answer time budget: high, so that a slow row does not cut answers short")  # fmt: skip
    parser.add_argument("--threads", type=int, default=None, help="model threads (in-process and llama-server)")
    parser.add_argument("--token-delay", type=float, default=0.02, help="seconds per token of fake-http")
    parser.add_argument("--index", type=Path, default=None, help="default: index the example handbook")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per row")
    parser.add_argument("--plot", type=Path, default=None, help="write throughput vs clients to this PNG")
    parser.add_argument("--json", type=Path, default=None, help="write every row to this JSON file")
    args = parser.parse_args()
    lms = args.lm or ["fake-http@1", "fake-http@8"]
    counts = [int(c) for c in args.clients.split(",")]
    if min(counts) < 1 or args.per_client < 1:
        parser.error("client counts and --per-client must be at least 1")
    for lm in lms:
        parse_lm(lm)  # a bad spec fails before anything starts
    questions = [q.strip() for q in (EXAMPLES / "questions.txt").read_text("utf-8").splitlines() if q.strip()]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.index is None:
            from flare.retrieve.corpus import load_corpus
            from flare.retrieve.tantivy_index import build_index

            args.index = Path(tmp) / "index"
            build_index(load_corpus(Path(str(EXAMPLES / "handbook.jsonl"))), args.index)
        for lm in lms:
            for n in counts:
                rows.append(run_row(args, lm, n, questions))
                print(f"  {lm} x{n}: {rows[-1]['answers_per_s']} answers/s", file=sys.stderr, flush=True)
    report(rows, args)
    if args.plot:
        plot(rows, args.plot)
    if args.json:
        args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
