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
retention. The default keeps the last ``max_traces`` in memory. A write the store fails (a
database restarting) is queued and retried (:mod:`flare.server.trace_buffer`); what is still
queued at shutdown gets ``TRACE_FLUSH_WAIT`` seconds, and any trace never written is counted in
``flare_traces_lost_total``.

``index`` (an :class:`~flare.server.reload.IndexSource`) lets the server serve a rebuilt index
without a restart: it is watched every ``limits.index_poll_seconds`` and reloaded on request
(``app.state.reloader.request()``, what SIGHUP does in ``flare serve``).

``await app.state.drain()`` drains the server, what ``flare serve`` does on SIGTERM: new
requests get 503, answers in flight get ``limits.shutdown_grace`` seconds to finish, then are
ended with a clean error (their traces stored), and it returns once their responses are sent.
"""

from __future__ import annotations

import asyncio
import contextlib
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
from flare.lm.base import declared
from flare.retrieve.base import Retriever
from flare.server import chat, routes
from flare.server.admission import Gate
from flare.server.auth import KeyStore
from flare.server.errors import ApiError
from flare.server.limits import Limits
from flare.server.metrics import Metrics
from flare.server.reload import IndexReloader, IndexSource
from flare.server.runner import Service
from flare.server.trace_buffer import BufferedTraceStore
from flare.server.traces import MemoryTraceStore, TraceStore, open_trace_store

log = logging.getLogger("flare.server")
_ROUTE_LABELS = ("/v1/answers", "/v1/chat/completions", "/v1/models", "/healthz", "/metrics")
_ANSWER_ROUTES = ("/v1/answers", "/v1/chat/completions")
CUT_WAIT = 15.0  # seconds, after the grace period, for cut answers to stop and their responses to end
TRACE_FLUSH_WAIT = 10.0  # seconds at shutdown to write traces still waiting for a store that was down


def create_app(
    engine: Flare | Callable[[], Flare],
    keys: KeyStore,
    limits: Limits | None = None,
    traces: TraceStore | str | None = None,
    index: IndexSource | None = None,
) -> Starlette:
    """The flare HTTP API (see ``docs/serving.md``) around one engine."""
    limits = limits or Limits()
    metrics = Metrics(lambda: gate.active, lambda: _gauges(app))
    gate = Gate(limits.max_concurrency, limits.max_queue, limits.queue_timeout, metrics)
    open_answers = _Open()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        flare = engine if isinstance(engine, Flare) else await anyio.to_thread.run_sync(engine)
        check_principals(flare.retriever, keys)
        await anyio.to_thread.run_sync(declared(flare.lm).load)  # fail before serving, not on the first request
        store = await anyio.to_thread.run_sync(_open_store, traces, limits)
        buffered = BufferedTraceStore(store, metrics)
        service = Service(flare, gate, buffered, metrics)
        app.state.service = service
        tasks: list[asyncio.Task[None]] = []
        if index is not None:
            reloader = IndexReloader(index, service, metrics, poll_seconds=limits.index_poll_seconds,
                                     check=lambda retriever: check_principals(retriever, keys))  # fmt: skip
            app.state.reloader = reloader
            tasks.append(asyncio.create_task(reloader.run(), name="flare-index-reloader"))
        log.info("ready", extra={"fields": {"event": "ready", "model": flare.lm.name,
                                            "principals": len(keys.principals)}})  # fmt: skip
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            service.cancel_all()
            await anyio.to_thread.run_sync(service.wait_idle, CUT_WAIT)
            await anyio.to_thread.run_sync(buffered.drain, TRACE_FLUSH_WAIT)
            if store is not traces:  # opened here from a spec: ours to close
                store.close()

    async def drain() -> None:
        """Stop admitting, give answers in flight ``shutdown_grace`` s, then cut them; idempotent."""
        service: Service = app.state.service
        if not gate.draining:
            gate.drain(limits.shutdown_grace)
            log.info("draining", extra={"fields": {"event": "draining", "in_flight": service.running,
                                                   "grace_seconds": limits.shutdown_grace}})  # fmt: skip
        if not await anyio.to_thread.run_sync(service.wait_idle, limits.shutdown_grace):
            cut = service.cut_all()
            log.warning("shutdown grace over: answers cut", extra={"fields": {"event": "drain_cut", "cut": cut}})
            await anyio.to_thread.run_sync(service.wait_idle, CUT_WAIT)
        await open_answers.wait_empty(CUT_WAIT)  # the cut answers' error events have been sent
        log.info("drained", extra={"fields": {"event": "drained"}})

    app = Starlette(
        routes=[*routes.ROUTES, *chat.ROUTES],
        lifespan=lifespan,
        exception_handlers={ApiError: _api_error, Exception: _internal_error},
    )
    app.state.keys = keys
    app.state.limits = limits
    app.state.metrics = metrics
    app.state.reloader = None
    app.state.drain = drain
    app.add_middleware(_AccessLog, metrics=metrics, open_answers=open_answers)
    return app


def _gauges(app: Starlette) -> list[tuple[str, str, float]]:
    service: Service | None = getattr(app.state, "service", None)
    if service is None:
        return []
    gate = service.gate
    return [
        ("flare_slots_in_use", "Answer slots in use.", gate.active),
        ("flare_slots", "Answer slots (max_concurrency).", gate.limit),
        ("flare_queue_depth", "Requests waiting for a slot.", gate.waiting),
        ("flare_queue_limit", "Most requests that may wait (max_queue).", gate.max_queue),
        ("flare_draining", "1 while the server drains for shutdown.", int(gate.draining)),
        ("flare_index_generation", "Generation of the served index (1 at start, +1 per reload).",
         service.index.generation),
        ("flare_traces_pending", "Traces waiting for the trace store to take them (it failed a write).",
         getattr(service.traces, "pending", 0)),
    ]  # fmt: skip


class _Open:
    """How many answering requests are in progress (their responses not yet ended)."""

    def __init__(self) -> None:
        self.count = 0
        self._empty = asyncio.Event()
        self._empty.set()

    def enter(self) -> None:
        self.count += 1
        self._empty.clear()

    def leave(self) -> None:
        self.count -= 1
        if self.count <= 0:
            self._empty.set()

    async def wait_empty(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._empty.wait(), timeout)
        except TimeoutError:
            return False
        return True


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
    if exc.status in (401, 413):  # admission counts its own refusals (429, 503)
        request.app.state.metrics.inc("flare_rejected_total", reason=str(exc.status))
    return exc.response()


async def _internal_error(request: Request, exc: Exception) -> Response:
    rid = getattr(request.state, "request_id", "?")
    log.error("unhandled error", exc_info=exc, extra={"fields": {"request_id": rid}})
    return ApiError(500, "internal_error", f"internal error (request {rid}); see the server log").response()


class _AccessLog:
    """Request id, one JSON log line and a counter per HTTP request."""

    def __init__(self, app: ASGIApp, metrics: Metrics, open_answers: _Open) -> None:
        self.app = app
        self.metrics = metrics
        self.open_answers = open_answers

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

        answering = scope.get("path") in _ANSWER_ROUTES
        if answering:
            self.open_answers.enter()
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            record()  # a response that never finished (client gone, error)
            if answering:
                self.open_answers.leave()


def _route_label(path: str) -> str:
    """A bounded label for metrics: trace ids and unknown paths do not create new series."""
    if path in _ROUTE_LABELS:
        return path
    if path.startswith("/v1/traces/"):
        return "/v1/traces/{id}"
    if path == "/viewer" or path.startswith("/viewer/"):
        return "/viewer"
    return "other"
