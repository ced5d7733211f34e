"""Hostile input, measured: filter parsing before and after the fix, and a server under attack.

Part 1 parses the reported attack (``acl=x`` + n spaces + ``y``) with the filter pattern flare
used before (kept here as the reference; it backtracks quadratically) and with today's
:func:`~flare.retrieve.filters.split_expression`, side by side, doubling n.

Part 2 starts a server in a child process on 127.0.0.1 (instant scripted model, the bundled
handbook index, a 2 MB body limit so that 1 MB bodies reach validation), then reports how
long a 1 MB filter, a 1 MB question and a 1 MB body over the default 64 kB limit take to be
refused, and ``/healthz`` latency idle and while four clients (another process) send 1 MB
hostile bodies without pause (the ratio is the slowdown an attacker causes). On a 2-core
machine the attackers, the server and the measuring client share the CPU, so part of that
slowdown is plain CPU contention.

Usage::

    .venv/bin/python benchmarks/bench_hostile.py [--rounds 30] [--max-old 16000]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path

import httpx

from flare.evaluate.metrics import percentile
from flare.retrieve.filters import split_expression

KEY = "sk-bench-0123456789abcdefghij"
MB = 1_000_000
OLD_PATTERN = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.\-]*)\s*(>=|<=|=|>|<)\s*(.*?)\s*$")  # before the fix


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def parsing(max_old: int) -> None:
    print("filter parsing: 'acl=x' + n spaces + 'y'")
    print(f"{'n':>9} {'before (s)':>12} {'now (s)':>10} {'before/now':>11}")
    for n in (1_000, 2_000, 4_000, 8_000, 16_000, 125_000, MB):
        expr = "acl=x" + " " * n + "y"
        now = min(timed(lambda e=expr: split_expression(e)) for _ in range(5))  # type: ignore[misc]
        if n <= max_old:
            before = timed(lambda e=expr: OLD_PATTERN.match(e))  # type: ignore[misc]
            print(f"{n:>9} {before:>12.4f} {now:>10.6f} {before / now:>11.0f}")
        else:
            print(f"{n:>9} {'(too slow)':>12} {now:>10.6f}")


# ------------------------------------------------------------------ server (child process)


def serve(index: str, port: int, body_limit: int) -> None:
    import uvicorn

    from flare.config import Settings
    from flare.engine.loop import Flare
    from flare.retrieve.tantivy_index import TantivyRetriever
    from flare.server import KeyStore, Limits, create_app
    from flare.server.logs import configure
    from flare.testing.scripted import ScriptedLM

    reply = ScriptedLM.sentence(" Travel expenses are reimbursed within ten working days. And")
    engine = Flare(ScriptedLM([(lambda p: True, reply)], name="fake"), TantivyRetriever(index), Settings())
    keys = KeyStore.from_config({"keys": [{"key": KEY, "principal": "bench", "groups": ["staff"]}]})
    configure("error")
    uvicorn.run(create_app(engine, keys, Limits(max_body_bytes=body_limit)), host="127.0.0.1", port=port,
                log_level="error", access_log=False)  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(index: str, body_limit: int) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    cmd = [sys.executable, __file__, "--serve", index, str(port), str(body_limit)]
    proc = subprocess.Popen(cmd, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not start")


def _figures(label: str, seconds: list[float]) -> str:
    ms = [s * 1000 for s in seconds]
    return f"{label:<44} p50 {percentile(ms, 50):7.2f} ms   max {max(ms):7.2f} ms   (n={len(ms)})"


def attack(index: str, rounds: int) -> None:
    bodies = {
        "1 MB filter ('acl=x' + spaces + 'y')": json.dumps({"question": "q?", "filters": ["acl=x" + " " * MB + "y"]}),
        "1 MB question": json.dumps({"question": "why " * (MB // 4)}),
    }
    proc, url = _start(index, 2 * MB)
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            print("\nrefusing hostile requests (server with a 2 MB body limit)")
            for label, body in bodies.items():
                times, codes = [], set()
                for _ in range(rounds):
                    start = time.perf_counter()
                    codes.add(http.post("/v1/answers", content=body).status_code)
                    times.append(time.perf_counter() - start)
                print(_figures(f"{label} -> {sorted(codes)}", times))
            idle = [timed(lambda: http.get("/healthz")) for _ in range(rounds)]
            # The attackers run in another process, so they do not share this one's GIL.
            flood = subprocess.Popen([sys.executable, __file__, "--flood", url], stdout=subprocess.PIPE)
            assert flood.stdout is not None
            flood.stdout.readline()  # "flooding": the first hostile bodies are on their way
            busy = [timed(lambda: http.get("/healthz")) for _ in range(rounds)]
            flood.terminate()
            flood.wait(10)
            print(_figures("/healthz, idle", idle))
            print(_figures("/healthz, 4 clients sending 1 MB hostile bodies", busy))
            print(f"{'/healthz p50 under attack / idle':<44} {percentile(busy, 50) / percentile(idle, 50):.1f}x")
    finally:
        proc.terminate()
        proc.wait(10)
    proc, url = _start(index, 64_000)
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            body = bodies["1 MB question"]
            times = [timed(lambda: http.post("/v1/answers", content=body)) for _ in range(rounds)]
            print(_figures("1 MB body, default 64 kB limit -> 413", times))
    finally:
        proc.terminate()
        proc.wait(10)


def flood(url: str) -> None:
    """Four clients sending 1 MB hostile bodies without pause (the child started by :func:`attack`)."""
    bodies = [json.dumps({"question": "q?", "filters": ["acl=x" + " " * MB + "y"]}),
              json.dumps({"question": "why " * (MB // 4)})] * 2  # fmt: skip
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}

    def client(body: str) -> None:
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            while True:
                http.post("/v1/answers", content=body)

    for body in bodies:
        threading.Thread(target=client, args=(body,), daemon=True).start()
    print("flooding", flush=True)
    threading.Event().wait()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--flood":
        flood(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--max-old", type=int, default=16_000, help="largest n to run the old pattern on")
    args = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} on {os.cpu_count()} cores")
    parsing(args.max_old)
    from flare.retrieve.corpus import load_corpus
    from flare.retrieve.tantivy_index import build_index

    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "index"
        build_index(load_corpus(Path(str(files("flare") / "data" / "examples" / "handbook.jsonl"))), index)
        attack(str(index), args.rounds)


if __name__ == "__main__":
    main()
