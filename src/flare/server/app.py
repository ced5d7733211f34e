"""The ASGI application: ``create_app(engine, keys, limits)``.

Example::

    from flare.server import KeyStore, Limits, create_app
    app = create_app(lambda: Flare(resolve_model(None), TantivyRetriever("index")),
                     KeyStore.load("keys.toml"), Limits(max_concurrency=4))
    uvicorn.run(app, host="127.0.0.1", port=8000)

``engine`` is a :class:`~flare.engine.loop.Flare` or a function making one; a function is called
at start-up, so building the app is cheap and a model that fails to load stops the server before
it accepts requests. The engine's ``settings`` are the default for every answer, its ``tracer``
(if any) also receives every trace.

``traces`` is where served traces are kept for ``GET /v1/traces/{id}``: a store, or a spec
opened at start-up and closed at shutdown (``"sqlite:PATH"``, ``"postgresql://…"``, ``"memory"``,
see :mod:`flare.server.traces`) with ``limits.max_traces`` and ``limits.max_trace_age_days`` as
retention. The default keeps the last ``max_traces`` in memory.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from flare.engine.loop import Flare
from flare.errors import ConfigError, FlareError
from flare.retrieve.base import Retriever
from flare.server import chat, routes
from flare.server.auth import KeyStore
from flare.server.errors import ApiError
from flare.server.limits import Gate, Limits
from flare.server.metrics import Metrics
from flare.server.runner import Service
from flare.server.traces import MemoryTraceStore, TraceStore, open_trace_store

log = logging.getLogger("flare.server")
_ROUTE_LABELS = ("/v1/answers", "/v1/chat/completions", "/v1/models", "/healthz", "/metrics")


def create_app(
    engine: Flare | Callable[[], Flare],
    keys: KeyStore,
    limits: Limits | None = None,
    traces: TraceStore | str | None = None,
) -> Starlette:
    """The flare HTTP API (see ``docs/serving.md``) around one engine."""
    limits = limits or Limits()
    gate = Gate(limits.max_concurrency)
    metrics = Metrics(lambda: gate.active)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        flare = engine if isinstance(engine, Flare) else await anyio.to_thread.run_sync(engine)
        check_principals(flare.retriever, keys)
        load = getattr(flare.lm, "load", None)
        if callable(load):
            await anyio.to_thread.run_sync(load)  # fail before serving, not on the first request
        store = await anyio.to_thread.run_sync(_open_store, traces, limits)
        service = Service(flare, gate, store, metrics)
        app.state.service = service
        log.info("ready", extra={"fields": {"event": "ready", "model": flare.lm.name,
                                            "principals": len(keys.principals)}})  # fmt: skip
        try:
            yield
        finally:
            service.cancel_all()
            if store is not traces:  # opened here from a spec: ours to close
                store.close()

    app = Starlette(
        routes=[*routes.ROUTES, *chat.ROUTES],
        lifespan=lifespan,
        exception_handlers={ApiError: _api_error, Exception: _internal_error},
    )
    app.state.keys = keys
    app.state.limits = limits
    app.state.metrics = metrics
    app.add_middleware(_AccessLog, metrics=metrics)
    return app


def _open_store(traces: TraceStore | str | None, limits: Limits) -> TraceStore:
    if traces is None:
        return MemoryTraceStore(limits.max_traces, limits.max_trace_age_days)
    if isinstance(traces, str):
        return open_trace_store(traces, max_traces=limits.max_traces, max_age_days=limits.max_trace_age_days)
    return traces


def check_principals(retriever: Retriever, keys: KeyStore) -> None:
    """Every principal's filters must name fields the index has, or no answer could work.

    ``flare serve`` calls this before the server starts, so a key file that does not fit the
    index is one line with a hint, not a failed start-up.
    """
    for principal in keys.principals:
        try:
            retriever.check_filters(principal.filters)
        except FlareError as err:
            raise ConfigError(
                f"key file: principal {principal.name!r}: {err.message}",
                f"{err.hint}; the key file's acl_field (default 'acl') and filters must name fields of the index",
            ) from None


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    if exc.status == 429:
        request.app.state.metrics.inc("flare_rejected_total", reason="concurrency")
    elif exc.status in (401, 413):
        request.app.state.metrics.inc("flare_rejected_total", reason=str(exc.status))
    return exc.response()


async def _internal_error(request: Request, exc: Exception) -> Response:
    rid = getattr(request.state, "request_id", "?")
    log.error("unhandled error", exc_info=exc, extra={"fields": {"request_id": rid}})
    return ApiError(500, "internal_error", f"internal error (request {rid}); see the server log").response()


class _AccessLog:
    """Request id, one JSON log line and a counter per HTTP request."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = uuid.uuid4().hex[:12]
        state = scope.setdefault("state", {})
        state["request_id"] = rid
        started = time.perf_counter()
        status = 500
        logged = False

        def record() -> None:
            nonlocal logged
            if logged:
                return
            logged = True
            route = _route_label(str(scope.get("path", "")))
            self.metrics.inc("flare_http_requests_total", route=route, status=str(status))
            fields = {
                "event": "request",
                "request_id": rid,
                "method": scope.get("method"),
                "route": route,
                "status": status,
                "ms": round((time.perf_counter() - started) * 1000, 1),
                "principal": state.get("principal"),
            }
            log.info("%s %s %s", scope.get("method"), route, status, extra={"fields": fields})

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", rid.encode())]
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                record()  # before the last byte leaves: a client that has the response sees the line
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            record()  # a response that never finished (client gone, error)


def _route_label(path: str) -> str:
    """A bounded label for metrics: trace ids and unknown paths do not create new series."""
    if path in _ROUTE_LABELS:
        return path
    if path.startswith("/v1/traces/"):
        return "/v1/traces/{id}"
    if path == "/viewer" or path.startswith("/viewer/"):
        return "/viewer"
    return "other"
