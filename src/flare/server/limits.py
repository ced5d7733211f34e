"""Operational limits of the server: budgets per answer, request size, concurrency and lifecycle.

Each limit exists so that one caller cannot take the machine from the others: budgets bound the
work of one answer (requirement C2), the body limit bounds memory per request, and the admission gate
(:mod:`flare.server.admission`) bounds how many answers run on the model at once and how many
wait for a slot. ``shutdown_grace`` and ``index_poll_seconds`` say how the server drains on
SIGTERM and how often it looks for a rebuilt index.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from starlette.requests import Request

from flare.config import Settings
from flare.errors import ConfigError
from flare.server.errors import ApiError

BUDGETS: tuple[str, ...] = ("max_seconds", "max_retrievals", "max_output_tokens", "max_sentences")
_ZERO_OK = frozenset({"max_retrievals", "max_queue", "shutdown_grace", "index_poll_seconds"})


@dataclass(frozen=True, slots=True)
class Limits:
    """Server-side maxima. A request may lower a budget, never raise it above these.

    Example::

        create_app(engine, keys, Limits(max_concurrency=2, max_seconds=30))
    """

    max_concurrency: int = 4  # answers in progress at once; the next ones wait in the queue
    max_queue: int = 8  # requests waiting for a slot; beyond them 429 (0: no queue, refuse at once)
    queue_timeout: float = 30.0  # seconds a request may wait for a slot before it gets 429
    max_body_bytes: int = 64_000  # a question is at most 4,000 characters; 64 kB is plenty
    max_seconds: float = 60.0
    max_retrievals: int = 8
    max_output_tokens: int = 256
    max_sentences: int = 12
    max_traces: int = 1000  # traces kept for GET /v1/traces/{id}, oldest dropped (flare serve: 100,000)
    max_trace_age_days: float = 30.0  # older traces are deleted and never served
    heartbeat_seconds: float = 10.0  # SSE comment when nothing else was sent, keeps proxies open
    shutdown_grace: float = 30.0  # SIGTERM: seconds answers in flight may take to finish (0: cut at once)
    index_poll_seconds: float = 2.0  # how often to look for a rebuilt index (0: only on SIGHUP)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value < 0 or (value == 0 and f.name not in _ZERO_OK):
                raise ConfigError(f"limit {f.name}={value} is out of range", f"set {f.name} above 0")


def budget_settings(base: Settings, limits: Limits, requested: dict[str, float | int | None]) -> Settings:
    """``base`` with each budget set to the smallest of base, server maximum and request.

    A request value above the server maximum is clamped, not rejected: chat clients often send a
    large ``max_tokens`` by default, and the answer says which cap ended it (``stop_reason``).
    """
    changes: dict[str, float | int] = {}
    for name in BUDGETS:
        value = min(getattr(base, name), getattr(limits, name))
        asked = requested.get(name)
        if asked is not None:
            if asked <= 0 and name != "max_retrievals":
                raise ApiError(400, "invalid_request_error", f"{name} must be positive")
            if asked < 0:
                raise ApiError(400, "invalid_request_error", f"{name} must not be negative")
            value = min(value, asked)
        changes[name] = value
    return base.with_overrides(**changes)


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, or 413 as soon as it is known to exceed ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> ApiError:
    return ApiError(413, "request_too_large", f"the request body is larger than {limit} bytes")
