"""Prometheus metrics in the text exposition format, with no extra dependency (requirement O3).

Exposed at ``GET /metrics``:

* ``flare_sentences_total`` / ``flare_sentences_retrieved_total`` and their ratio
  ``flare_trigger_rate`` — the sentence-level trigger rate;
* ``flare_answers_total{stop_reason}``, ``flare_retrievals_total``, ``flare_lm_calls_total``,
  ``flare_lm_tokens_evaluated_total`` — per-answer figures are these divided by answers;
* ``flare_stage_seconds{stage}`` — draft / retrieve / regenerate / generate time per step, taken
  from each answer's trace timings;
* ``flare_answer_seconds`` — end-to-end latency of an answer (p50/p95 via
  ``histogram_quantile``), ``flare_http_requests_total{route,status}``, ``flare_in_flight``,
  ``flare_rejected_total{reason}``, ``flare_cancelled_total`` (client went away) and
  ``flare_trace_store_errors_total`` (an answer whose trace the store refused at first);
* admission: ``flare_slots_in_use``, ``flare_slots``, ``flare_queue_depth`` (gauges),
  ``flare_queue_waits_total`` (requests that had to wait) and ``flare_queue_wait_seconds``;
  ``flare_rejected_total{reason}`` counts ``queue_full``, ``queue_timeout``, ``concurrency`` (no
  queue configured), ``draining``, ``401`` and ``413``;
* the served index: ``flare_index_generation`` and ``flare_index_reloads_total{outcome}``;
  traces: ``flare_traces_pending`` (kept in memory while the store is down) and
  ``flare_traces_lost_total``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0)
WAIT_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
STAGE_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

Labels = tuple[tuple[str, str], ...]
Gauges = Callable[[], Sequence[tuple[str, str, float]]]
"""Gauges read when rendering: ``(name, help, value)`` each."""


class Metrics:
    """A small thread-safe registry of counters and histograms, rendered on demand."""

    def __init__(self, in_flight: Callable[[], int] = lambda: 0, gauges: Gauges = lambda: ()) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, dict[Labels, float]] = {}
        self._hist: dict[str, dict[Labels, list[float]]] = {}  # bucket counts..., sum, count
        self._buckets: dict[str, tuple[float, ...]] = {}
        self._help: dict[str, str] = {}
        self._in_flight = in_flight
        self._gauges = gauges
        for name, text in _COUNTERS.items():
            self._help[name] = text
            self._counters[name] = {}
        self._histogram("flare_answer_seconds", "End-to-end seconds per answer.", LATENCY_BUCKETS)
        self._histogram("flare_stage_seconds", "Seconds per step and stage (from traces).", STAGE_BUCKETS)
        self._histogram("flare_queue_wait_seconds", "Seconds a request waited in the queue for a slot.", WAIT_BUCKETS)

    def inc(self, name: str, amount: float = 1.0, **labels: str) -> None:
        key = _labels(labels)
        with self._lock:
            series = self._counters[name]
            series[key] = series.get(key, 0.0) + amount

    def observe(self, name: str, value: float, **labels: str) -> None:
        key = _labels(labels)
        buckets = self._buckets[name]
        with self._lock:
            row = self._hist[name].setdefault(key, [0.0] * (len(buckets) + 2))
            for i, bound in enumerate(buckets):
                if value <= bound:
                    row[i] += 1
            row[-2] += value
            row[-1] += 1

    def record_answer(self, answer: Mapping[str, Any], trace: Mapping[str, Any] | None, seconds: float) -> None:
        """Count one finished answer (its ``to_dict()``), its wall time and its stage timings."""
        sentences = answer.get("sentences", [])
        self.inc("flare_answers_total", stop_reason=str(answer.get("stop_reason", "")))
        self.inc("flare_sentences_total", len(sentences))
        self.inc("flare_sentences_retrieved_total", sum(1 for s in sentences if s.get("retrieved")))
        self.inc("flare_retrievals_total", float(answer.get("retrievals", 0)))
        self.inc("flare_lm_calls_total", float(answer.get("lm_calls", 0)))
        self.observe("flare_answer_seconds", seconds)
        if trace is None:
            return
        self.inc("flare_lm_tokens_evaluated_total", float(trace.get("lm_tokens_evaluated", 0)))
        for step in trace.get("steps", []):
            for stage, seconds in step.get("timings", {}).items():
                self.observe("flare_stage_seconds", float(seconds), stage=str(stage))

    def render(self) -> str:
        """The text exposition format (``text/plain; version=0.0.4``)."""
        out: list[str] = []
        with self._lock:
            for name, series in self._counters.items():
                out += [f"# HELP {name} {self._help[name]}", f"# TYPE {name} counter"]
                out += [f"{name}{_fmt(k)} {_num(v)}" for k, v in sorted(series.items())]
                if not series and not _COUNTER_LABELS.get(name):
                    out.append(f"{name} 0")
            for name, rows in self._hist.items():
                out += [f"# HELP {name} {self._help[name]}", f"# TYPE {name} histogram"]
                for key, row in sorted(rows.items()):
                    out += _histogram_lines(name, key, self._buckets[name], row)
            sentences = sum(self._counters["flare_sentences_total"].values())
            retrieved = sum(self._counters["flare_sentences_retrieved_total"].values())
        rate = retrieved / sentences if sentences else 0.0
        out += [
            "# HELP flare_trigger_rate Share of committed sentences that retrieved documents.",
            "# TYPE flare_trigger_rate gauge",
            f"flare_trigger_rate {_num(rate)}",
            "# HELP flare_in_flight Answers in progress.",
            "# TYPE flare_in_flight gauge",
            f"flare_in_flight {self._in_flight()}",
        ]
        for name, text, value in self._gauges():
            out += [f"# HELP {name} {text}", f"# TYPE {name} gauge", f"{name} {_num(value)}"]
        return "\n".join(out) + "\n"

    def _histogram(self, name: str, text: str, buckets: Sequence[float]) -> None:
        self._help[name] = text
        self._hist[name] = {}
        self._buckets[name] = tuple(buckets)


_COUNTERS = {
    "flare_http_requests_total": "HTTP requests by route and status.",
    "flare_answers_total": "Finished answers by stop reason.",
    "flare_sentences_total": "Committed sentences.",
    "flare_sentences_retrieved_total": "Committed sentences generated from retrieved documents.",
    "flare_retrievals_total": "Searches run.",
    "flare_lm_calls_total": "Language model calls.",
    "flare_lm_tokens_evaluated_total": "Prompt tokens evaluated plus tokens generated.",
    "flare_rejected_total": "Requests refused before generation, by reason.",
    "flare_cancelled_total": "Answers stopped because the client went away.",
    "flare_errors_total": "Answers that failed with an error.",
    "flare_trace_store_errors_total": "Finished answers whose trace could not be stored at once.",
    "flare_traces_lost_total": "Traces never stored (the store stayed down, or too many were pending).",
    "flare_queue_waits_total": "Requests that waited in the queue for a slot.",
    "flare_shutdown_cut_total": "Answers ended by the shutdown grace period running out.",
    "flare_index_reloads_total": "Index reloads by outcome (loaded, refused).",
}
_COUNTER_LABELS = {
    "flare_http_requests_total": True,
    "flare_answers_total": True,
    "flare_rejected_total": True,
    "flare_index_reloads_total": True,
}


def _labels(labels: Mapping[str, str]) -> Labels:
    return tuple(sorted(labels.items()))


def _fmt(key: Labels, extra: Labels = ()) -> str:
    pairs = key + extra
    if not pairs:
        return ""
    body = ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)
    return "{" + body + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _num(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return str(int(value)) if float(value).is_integer() else repr(value)


def _histogram_lines(name: str, key: Labels, buckets: Sequence[float], row: list[float]) -> list[str]:
    lines = [f"{name}_bucket{_fmt(key, (('le', repr(float(b))),))} {_num(row[i])}" for i, b in enumerate(buckets)]
    lines.append(f"{name}_bucket{_fmt(key, (('le', '+Inf'),))} {_num(row[-1])}")
    lines.append(f"{name}_sum{_fmt(key)} {_num(row[-2])}")
    lines.append(f"{name}_count{_fmt(key)} {_num(row[-1])}")
    return lines
