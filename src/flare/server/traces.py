"""Where the server keeps traces: one capture per answer, a store keyed by trace id and owner.

A store keeps one record per answer — its trace (``flare.trace/1``) and the principal it belongs
to — and hands it back only to that principal. Three stores, chosen by a spec string
(``flare serve --trace-store SPEC``):

* ``sqlite:PATH`` or a plain ``PATH`` — a SQLite file (WAL), the default of ``flare serve``
  (:func:`default_trace_path`); it survives restarts;
* ``postgresql://…`` — a PostgreSQL database shared by several replicas behind a load balancer;
* ``memory`` — the last ``max_traces`` in this process only (what :func:`create_app` uses when
  given no store).

Retention is by count and by age: the oldest traces beyond ``max_traces`` and any older than
``max_age_days`` are deleted, and an expired trace is never served even before it is deleted.

Example::

    store = open_trace_store("sqlite:/var/lib/flare/traces.sqlite", max_traces=100_000)
    store.put("alice", trace)
    assert store.get(trace["trace_id"], "bob") is None    # not bob's: same as unknown
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Protocol

from flare.errors import ConfigError
from flare.trace.schema import TraceRecord
from flare.trace.tracers import Tracer

__all__ = ["CaptureTracer", "MemoryTraceStore", "TraceStore", "default_trace_path", "open_trace_store"]

STORE_HINT = "use --trace-store sqlite:PATH, postgresql://USER@HOST/DB or memory"


class TraceStore(Protocol):
    """Traces by id, each readable only by its owner (a principal's name)."""

    name: str
    """What the store is, for logs and /healthz, without credentials."""

    def put(self, owner: str, trace: dict[str, Any]) -> None:
        """Keep ``trace`` (it has a ``trace_id``) for ``owner``; a second put of an id is ignored."""
        ...

    def get(self, trace_id: str, owner: str) -> dict[str, Any] | None:
        """The trace, or None when it does not exist, expired *or* belongs to someone else."""
        ...

    def close(self) -> None:
        """Release connections; the store is not used afterwards."""
        ...


class MemoryTraceStore:
    """The last ``max_traces`` traces of this process (no age limit unless ``max_age_days``)."""

    def __init__(self, max_traces: int = 1000, max_age_days: float | None = None) -> None:
        _check_retention(max_traces, max_age_days)
        self.name = "memory"
        self.max_traces = max_traces
        self.max_age = None if max_age_days is None else max_age_days * 86400.0
        self._lock = threading.Lock()
        self._traces: OrderedDict[str, tuple[str, float, dict[str, Any]]] = OrderedDict()

    def put(self, owner: str, trace: dict[str, Any]) -> None:
        with self._lock:
            self._traces.setdefault(str(trace["trace_id"]), (owner, time.time(), trace))
            while len(self._traces) > self.max_traces:
                self._traces.popitem(last=False)

    def get(self, trace_id: str, owner: str) -> dict[str, Any] | None:
        with self._lock:
            item = self._traces.get(trace_id)
        if item is None or item[0] != owner:
            return None
        if self.max_age is not None and item[1] < time.time() - self.max_age:
            return None
        return item[2]

    def close(self) -> None:
        with self._lock:
            self._traces.clear()


def default_trace_path() -> Path:
    """``$XDG_STATE_HOME/flare/traces.sqlite`` (``~/.local/state/flare/traces.sqlite``)."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "flare" / "traces.sqlite"


def open_trace_store(spec: str, *, max_traces: int = 100_000, max_age_days: float | None = 30.0) -> TraceStore:
    """Open the store ``spec`` names (see the module docstring); raises :class:`ConfigError`."""
    _check_retention(max_traces, max_age_days)
    spec = spec.strip()
    if not spec:
        raise ConfigError("the trace store spec is empty", STORE_HINT)
    if spec == "memory":
        return MemoryTraceStore(max_traces, max_age_days)
    from flare.server import trace_sql

    if spec.startswith(("postgresql://", "postgres://")):
        return trace_sql.PostgresTraceStore(spec, max_traces=max_traces, max_age_days=max_age_days)
    if "://" in spec:
        raise ConfigError(f"unknown trace store {spec.split('://')[0]!r}://", STORE_HINT)
    path = Path(spec.removeprefix("sqlite:")).expanduser()
    return trace_sql.SqliteTraceStore(path, max_traces=max_traces, max_age_days=max_age_days)


def _check_retention(max_traces: int, max_age_days: float | None) -> None:
    if max_traces < 1:
        raise ConfigError(f"max_traces must be ≥ 1, got {max_traces}", "keep at least one trace")
    if max_age_days is not None and not max_age_days > 0:
        raise ConfigError(f"max_age_days must be > 0, got {max_age_days}", "e.g. 30")


class CaptureTracer:
    """Tracer of one run: keeps its trace as a dict and forwards it to the server's tracer."""

    def __init__(self, forward: Tracer | None) -> None:
        self.forward = forward
        self.record_content = bool(forward and forward.record_content)
        self.trace: dict[str, Any] | None = None

    def emit(self, trace: TraceRecord) -> None:
        self.trace = trace.to_dict()
        if self.forward is not None:
            self.forward.emit(trace)
