"""Where traces go: nowhere (default), a list in memory, or a JSON-lines file."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Protocol

from flare.trace.schema import TraceRecord


class Tracer(Protocol):
    """Receives one finished :class:`TraceRecord` per answer."""

    record_content: bool

    def emit(self, trace: TraceRecord) -> None: ...


class NullTracer:
    """Records nothing (the default: tracing is opt-in)."""

    record_content = False

    def emit(self, trace: TraceRecord) -> None:
        return None


class MemoryTracer:
    """Keeps traces in a list, e.g. for tests or a server's trace store."""

    def __init__(self, *, record_content: bool = False) -> None:
        self.record_content = record_content
        self.traces: list[TraceRecord] = []

    def emit(self, trace: TraceRecord) -> None:
        self.traces.append(trace)


class JsonlTracer:
    """Appends one JSON line per answer to ``path`` (created with its parent folder).

    Example::

        tracer = JsonlTracer("runs/trace.jsonl")
        Flare(lm, retriever, tracer=tracer).answer("Who founded Versace?")
    """

    def __init__(self, path: str | Path, *, record_content: bool = False) -> None:
        self.path = Path(path)
        self.record_content = record_content
        self._lock = threading.Lock()

    def emit(self, trace: TraceRecord) -> None:
        line = json.dumps(trace.to_dict(), ensure_ascii=False)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line + "\n")


def read_traces(path: str | Path) -> list[dict[str, Any]]:
    """Every trace in a JSONL file, as dictionaries."""
    out = []
    with Path(path).open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                out.append(json.loads(line))
    return out
