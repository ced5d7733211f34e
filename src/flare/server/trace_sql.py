"""Trace stores in SQL databases: SQLite (one host) and PostgreSQL (shared by replicas).

One row per answer in ``flare_traces``: ``trace_id`` (primary key), ``owner`` (the principal's
name, checked on every read), ``created`` (Unix seconds, indexed for retention) and ``trace``
(the ``flare.trace/1`` JSON text, stored as written). ``flare_trace_meta`` records the schema
version; a store written by a newer flare is refused rather than misread.

Writes happen in the answer's worker thread, reads in a thread of the route, so each store
holds one connection behind a lock (a trace is a few kB: a write takes about a millisecond).
Retention runs at start-up and every :data:`PRUNE_EVERY` writes.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from flare.errors import ConfigError

__all__ = ["PRUNE_EVERY", "SCHEMA_VERSION", "PostgresTraceStore", "SqliteTraceStore"]

SCHEMA_VERSION = "1"
PRUNE_EVERY = 100  # writes between retention passes; a pass is two indexed deletes

_TABLES = (
    "CREATE TABLE IF NOT EXISTS flare_trace_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS flare_traces (trace_id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
    "created {real} NOT NULL, trace TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS flare_traces_created ON flare_traces (created)",
    "INSERT INTO flare_trace_meta (key, value) VALUES ('schema', ?) ON CONFLICT (key) DO NOTHING",
)
_INSERT = (
    "INSERT INTO flare_traces (trace_id, owner, created, trace) VALUES (?, ?, ?, ?) ON CONFLICT (trace_id) DO NOTHING"
)
_SELECT = "SELECT trace FROM flare_traces WHERE trace_id = ? AND owner = ? AND created >= ?"
_PRUNE_AGE = "DELETE FROM flare_traces WHERE created < ?"
_PRUNE_COUNT = (
    "DELETE FROM flare_traces WHERE created < (SELECT created FROM flare_traces ORDER BY created DESC LIMIT 1 OFFSET ?)"
)


class _SqlTraceStore(ABC):
    """The SQL both databases share; subclasses connect and run one statement."""

    def __init__(self, name: str, max_traces: int, max_age_days: float | None) -> None:
        self.name = name
        self.max_traces = max_traces
        self.max_age = None if max_age_days is None else max_age_days * 86400.0
        self._lock = threading.Lock()
        self._writes = 0
        self._last = 0.0

    def put(self, owner: str, trace: dict[str, Any]) -> None:
        text = json.dumps(trace, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            self._last = max(time.time(), self._last + 1e-6)  # distinct times: count retention is exact
            self._run(_INSERT, (str(trace["trace_id"]), owner, self._last, text))
            self._writes += 1
            if self._writes % PRUNE_EVERY == 0:
                self._prune()

    def get(self, trace_id: str, owner: str) -> dict[str, Any] | None:
        with self._lock:
            rows = self._run(_SELECT, (trace_id, owner, self._oldest()))
        if not rows:
            return None
        found: dict[str, Any] = json.loads(rows[0][0])
        return found

    def prune(self) -> None:
        """Apply retention now (it also runs at start-up and every ``PRUNE_EVERY`` writes)."""
        with self._lock:
            self._prune()

    def count(self) -> int:
        """How many traces the store holds (expired ones not yet deleted included)."""
        with self._lock:
            return int(self._run("SELECT COUNT(*) FROM flare_traces", ())[0][0])

    def _prune(self) -> None:
        if self.max_age is not None:
            self._run(_PRUNE_AGE, (self._oldest(),))
        self._run(_PRUNE_COUNT, (self.max_traces - 1,))

    def _oldest(self) -> float:
        return -1.0 if self.max_age is None else time.time() - self.max_age

    def _check_schema(self) -> None:
        version = str(self._run("SELECT value FROM flare_trace_meta WHERE key = 'schema'", ())[0][0])
        if version != SCHEMA_VERSION:
            raise ConfigError(
                f"trace store {self.name} has schema version {version}; this flare writes {SCHEMA_VERSION}",
                "upgrade flare, or point --trace-store at a new database",
            )

    @abstractmethod
    def _run(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Execute one statement (``?`` placeholders) in autocommit mode; rows if it returns any."""


class SqliteTraceStore(_SqlTraceStore):
    """Traces in a SQLite file (WAL journal: readers never wait for the writer).

    Several ``flare serve`` processes on one host may share the file; replicas on several hosts
    need :class:`PostgresTraceStore`. The file is created readable by its owner only: traces hold
    drafts and the passages the caller was allowed to see.
    """

    def __init__(self, path: str | Path, *, max_traces: int = 100_000, max_age_days: float | None = 30.0) -> None:
        self.path = Path(path)
        super().__init__(f"sqlite:{self.path}", max_traces, max_age_days)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self.path.exists():
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            self._db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across crashes of flare
            for sql in _TABLES:
                self._run(sql.format(real="REAL"), (SCHEMA_VERSION,) if "?" in sql else ())
            self._check_schema()
            self._prune()
        except (OSError, sqlite3.Error) as err:
            raise ConfigError(
                f"cannot open the trace store {self.path}: {err}",
                "give a writable path to a SQLite file: --trace-store sqlite:PATH",
            ) from None

    def _run(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return self._db.execute(sql, args).fetchall()

    def close(self) -> None:
        with self._lock:
            self._db.close()


class PostgresTraceStore(_SqlTraceStore):
    """Traces in PostgreSQL, so that replicas behind a load balancer serve each other's traces.

    ``url`` is a libpq URL (``postgresql://user:password@host:5432/db``; a password may also come
    from ``PGPASSWORD`` or ``~/.pgpass``). Tables are created on first use under an advisory
    lock, so replicas that start together do not race. A dropped connection is reopened once.
    """

    def __init__(self, url: str, *, max_traces: int = 100_000, max_age_days: float | None = 30.0) -> None:
        super().__init__(_redact(url), max_traces, max_age_days)
        self._url = url
        try:
            import psycopg
        except ImportError:
            raise ConfigError("a PostgreSQL trace store needs psycopg", "pip install 'flare-rag[postgres]'") from None
        self._psycopg = psycopg
        self._conn: Any = None
        try:
            conn = self._connect()
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(7243011)")  # one replica creates the tables
                for sql in _TABLES:
                    conn.execute(sql.format(real="DOUBLE PRECISION").replace("?", "%s"),
                                 (SCHEMA_VERSION,) if "?" in sql else None)  # fmt: skip
            self._check_schema()
            self._prune()
        except psycopg.Error as err:
            raise ConfigError(
                f"cannot use the trace store {self.name}: {_first_line(err)}",
                "check the URL, that the server is up and that the user may create tables",
            ) from None

    def _connect(self) -> Any:
        if self._conn is None or self._conn.closed:
            self._conn = self._psycopg.connect(self._url, autocommit=True, connect_timeout=10)
        return self._conn

    def _run(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        statement = sql.replace("?", "%s")
        for attempt in (0, 1):
            try:
                cursor = self._connect().execute(statement, args)
                return list(cursor.fetchall()) if cursor.description else []
            except self._psycopg.OperationalError:
                if attempt or self._conn is None or not self._conn.closed:
                    raise
                self._conn = None  # the server dropped us (restart, failover): reconnect once
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()


def _redact(url: str) -> str:
    """``url`` without its password, for logs and errors."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _first_line(err: Exception) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]
