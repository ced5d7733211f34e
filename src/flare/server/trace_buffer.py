"""Traces the store refused, kept in memory and written again once it is back.

:class:`BufferedTraceStore` wraps the server's trace store. A write that fails (PostgreSQL
restarting, a full disk) is not lost: the trace waits in a bounded in-memory queue, a background
thread writes the queue again every ``retry_seconds`` (doubling up to ``RETRY_MAX`` while the store
stays down), in order. While anything is pending, new traces join the queue behind it, so a store
that is down is touched by one thread once per retry, not by every answer. A trace that waits is
still served by ``GET /v1/traces/{id}`` from the queue.

Losses are bounded and counted, never silent: when the queue holds ``max_pending`` traces the
oldest is dropped, and at shutdown :meth:`BufferedTraceStore.drain` tries once more for up to its
timeout; each trace never written adds one to ``flare_traces_lost_total``. Each failed first
write adds one to ``flare_trace_store_errors_total``; ``flare_traces_pending`` is the queue.

Example::

    store = BufferedTraceStore(open_trace_store("postgresql://flare@db/flare"), metrics, max_pending=1000)
    store.put("alice", trace)        # never raises for a store that is down: the trace waits
    store.drain(timeout=10.0)        # at shutdown: write what waits, count the rest as lost
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Any

from flare.server.metrics import Metrics
from flare.server.traces import TraceStore

__all__ = ["MAX_PENDING", "RETRY_MAX", "BufferedTraceStore"]

log = logging.getLogger("flare.server")
MAX_PENDING = 1000  # traces kept while the store is down (a trace is a few kB: a few MB at most)
RETRY_MAX = 30.0  # seconds: the longest wait between two attempts while the store stays down


class BufferedTraceStore:
    """A :class:`~flare.server.traces.TraceStore` whose failed writes wait and are retried.

    Thread-safe: answers put from their worker threads, routes get from worker threads.
    """

    def __init__(
        self, store: TraceStore, metrics: Metrics, *, max_pending: int = MAX_PENDING, retry_seconds: float = 1.0
    ) -> None:
        if max_pending < 1 or not retry_seconds > 0:
            raise ValueError("max_pending must be ≥ 1 and retry_seconds > 0")
        self.store = store
        self.name = store.name
        self.max_pending = max_pending
        self.retry_seconds = retry_seconds
        self._metrics = metrics
        self._pending: collections.OrderedDict[str, tuple[str, dict[str, Any]]] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._write = threading.Lock()  # one writer of the queue at a time: the flusher or drain
        self._closed = False
        self._flusher: threading.Thread | None = None

    @property
    def pending(self) -> int:
        """Traces waiting to be written."""
        return len(self._pending)

    def put(self, owner: str, trace: dict[str, Any]) -> None:
        """Write ``trace`` now, or queue it when the store fails or others already wait."""
        with self._lock:
            queued, closed = bool(self._pending), self._closed
        if not queued:
            try:
                self.store.put(owner, trace)
                return
            except Exception as err:
                log.warning("trace store refused a write; the trace waits for a retry",
                            extra={"fields": {"event": "trace_deferred", "trace_id": trace.get("trace_id"),
                                              "store": self.name, "error": _first_line(err)}})  # fmt: skip
        self._metrics.inc("flare_trace_store_errors_total")
        if closed:  # after drain nothing retries: this one is lost now
            self._metrics.inc("flare_traces_lost_total")
            return
        self._enqueue(owner, trace)

    def get(self, trace_id: str, owner: str) -> dict[str, Any] | None:
        """A waiting trace first (only its owner's), else the store's answer."""
        with self._lock:
            waiting = self._pending.get(trace_id)
        if waiting is not None:
            return waiting[1] if waiting[0] == owner else None
        return self.store.get(trace_id, owner)

    def drain(self, timeout: float) -> int:
        """Stop retrying, write what waits for up to ``timeout`` s; the rest is counted lost. How many lost."""
        with self._lock:
            self._closed = True
            self._wake.notify_all()
        flusher = self._flusher
        if flusher is not None:
            flusher.join(timeout)
        deadline = time.monotonic() + timeout
        while self._pending and time.monotonic() < deadline:
            if not self._flush_once():
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
        with self._lock:
            lost = len(self._pending)
            self._pending.clear()
        if lost:
            self._metrics.inc("flare_traces_lost_total", float(lost))
            log.error("traces lost at shutdown: the store stayed down",
                      extra={"fields": {"event": "traces_lost", "lost": lost, "store": self.name}})  # fmt: skip
        return lost

    def close(self) -> None:
        """Drain briefly (see :meth:`drain`), then close the wrapped store."""
        self.drain(timeout=5.0)
        self.store.close()

    def _enqueue(self, owner: str, trace: dict[str, Any]) -> None:
        dropped = 0
        with self._lock:
            self._pending[str(trace["trace_id"])] = (owner, trace)
            while len(self._pending) > self.max_pending:
                self._pending.popitem(last=False)
                dropped += 1
            if self._flusher is None and not self._closed:
                self._flusher = threading.Thread(target=self._run, name="flare-trace-retry", daemon=True)
                self._flusher.start()
        if dropped:
            self._metrics.inc("flare_traces_lost_total", float(dropped))
            log.error("trace dropped: too many traces wait for the store",
                      extra={"fields": {"event": "traces_lost", "lost": dropped, "max_pending": self.max_pending,
                                        "store": self.name}})  # fmt: skip

    def _run(self) -> None:
        """The flusher: write the queue, waiting longer after each failed attempt; ends when empty or closed."""
        wait = self.retry_seconds
        while True:
            with self._lock:
                if self._closed:
                    self._flusher = None
                    return
                self._wake.wait(wait)
                if self._closed:
                    self._flusher = None
                    return
            if self._flush_once():
                with self._lock:
                    if not self._pending:
                        self._flusher = None
                        return
                wait = self.retry_seconds
            else:
                wait = min(RETRY_MAX, wait * 2)

    def _flush_once(self) -> bool:
        """Write waiting traces in order until one fails (False) or none is left (True)."""
        written = 0
        with self._write:
            while True:
                with self._lock:
                    if not self._pending:
                        break
                    trace_id, (owner, trace) = next(iter(self._pending.items()))
                try:
                    self.store.put(owner, trace)
                except Exception:
                    return False
                written += 1
                with self._lock:
                    self._pending.pop(trace_id, None)
        if written:
            log.info("trace store back: waiting traces written",
                     extra={"fields": {"event": "traces_flushed", "written": written, "store": self.name}})  # fmt: skip
        return True


def _first_line(err: Exception) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]
