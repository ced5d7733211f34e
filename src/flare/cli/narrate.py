"""``-v``: tell the user, step by step, what the loop decided and why (read from the trace)."""

from __future__ import annotations

import click

from flare.trace.schema import StepRecord, TraceRecord
from flare.trace.tracers import NullTracer, Tracer


class KeepLast:
    """A tracer that remembers the last trace and passes every trace on to ``inner``."""

    def __init__(self, inner: Tracer | None = None) -> None:
        self.inner: Tracer = inner or NullTracer()
        self.record_content = self.inner.record_content
        self.last: TraceRecord | None = None

    def emit(self, trace: TraceRecord) -> None:
        self.last = trace
        self.inner.emit(trace)


def narrate(trace: TraceRecord) -> None:
    """Print one block per step on stderr: draft, unsure words, decision, queries, result."""
    for step in trace.steps:
        click.echo(_step_lines(step), err=True)


def _step_lines(step: StepRecord) -> str:
    lines = [f"  [{step.index}] {step.kind}"]
    if step.predraft is not None:
        lines.append(f"      drafted before the names search, dropped: {step.predraft!r}")
    if step.draft is not None:
        lines[0] += f": {step.draft!r}"
        if step.low_tokens:
            unsure = ", ".join(f"{t.strip() or repr(t)} {p:.2f}" for t, p in step.low_tokens[:8])
            lines.append(f"      unsure (p < {step.threshold}): {unsure}")
    lines.append(f"      decision: {step.decision or '-'}")
    for q in step.queries:
        lines.append(f"      query: {q!r}")
    if step.retrieved:
        found = ", ".join(f"{r.id} ({r.score:.2f})" for r in step.retrieved)
        lines.append(f"      retrieved: {found}")
    if step.unread:
        lines.append(f"      not read (below found_floor): {', '.join(step.unread)}")
    if step.known:
        lines.append(f"      already in the prompt, name not followed to other pages: {', '.join(step.known)}")
    if step.sentence and step.sentence != step.draft:
        lines.append(f"      wrote: {step.sentence!r}")
    return "\n".join(lines)
