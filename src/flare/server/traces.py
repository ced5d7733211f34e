"""Where the server keeps traces: one capture per answer, a bounded store keyed by owner."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from flare.server.auth import Principal
from flare.trace.schema import TraceRecord
from flare.trace.tracers import Tracer


class TraceStore:
    """The last ``capacity`` traces, each readable only by the principal whose answer it is."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._traces: OrderedDict[str, tuple[Principal, dict[str, Any]]] = OrderedDict()

    def put(self, owner: Principal, trace: dict[str, Any]) -> None:
        with self._lock:
            self._traces[str(trace["trace_id"])] = (owner, trace)
            while len(self._traces) > self.capacity:
                self._traces.popitem(last=False)

    def get(self, trace_id: str, caller: Principal) -> dict[str, Any] | None:
        """The trace, or None when it does not exist *or* belongs to someone else (no oracle)."""
        with self._lock:
            item = self._traces.get(trace_id)
        if item is None or item[0] != caller:
            return None
        return item[1]


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
