"""The flare-native routes: answers (JSON or SSE), traces, health, metrics and the viewer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from importlib.resources import files
from typing import Any

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from flare.config import Settings
from flare.engine.loop import MAX_QUESTION_CHARS
from flare.server import sse
from flare.server.answering import Queued, answer
from flare.server.common import MAX_FILTERS, STRICT, FilterExpr, authenticate, error_for, parse
from flare.server.errors import not_found
from flare.server.limits import BUDGETS
from flare.server.request_settings import request_values, with_setting_fields
from flare.server.runner import Failure, Item, Service
from flare.types import Answer

VIEWER_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


class AnswerBody(BaseModel):
    """Body of ``POST /v1/answers``, plus every request-settable setting (see :data:`AnswerRequest`)."""

    model_config = ConfigDict(extra="forbid", **STRICT)

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    filters: list[FilterExpr] = Field(default_factory=list, max_length=MAX_FILTERS)
    stream: bool = False


AnswerRequest = with_setting_fields(AnswerBody, "AnswerRequest")
"""The body with one optional field per setting a request may choose; budgets only lower."""


async def answers(request: Request) -> Response:
    """``POST /v1/answers``: the cited answer as JSON, or as ``flare.sse/1`` events."""
    principal = authenticate(request)
    body = await parse(request, AnswerRequest)
    wants_stream = body.stream or "text/event-stream" in request.headers.get("accept", "")

    def render(done: Answer, settings: Settings) -> Response:
        budgets = {name: getattr(settings, name) for name in BUDGETS}
        return JSONResponse({"object": "flare.answer", **done.to_dict(), "budgets": budgets})

    return await answer(request, principal, body.question, body.filters, request_values(body), stream=wants_stream,
                        encode=lambda items: _flare_stream(items, request), render=render)  # fmt: skip


async def _flare_stream(events: AsyncIterator[Item | Queued | None], request: Request) -> AsyncIterator[bytes]:
    yield sse.comment(sse.SSE_VERSION)
    async for item in events:
        if item is None:
            yield sse.comment("keep-alive")
        elif isinstance(item, Queued):
            yield sse.queued(item.position, item.depth)
        elif isinstance(item, Failure):
            yield sse.flare_error(error_for(item.error, request).body())
            return
        else:
            yield sse.flare_event(item)


async def trace(request: Request) -> Response:
    """``GET /v1/traces/{id}``: the trace of one of the caller's own answers, else 404."""
    principal = authenticate(request)
    service: Service = request.app.state.service
    found = await anyio.to_thread.run_sync(service.traces.get, request.path_params["trace_id"], principal.name)
    if found is None:
        raise not_found("trace")
    return JSONResponse(caller_view(found))


def caller_view(trace: dict[str, Any]) -> dict[str, Any]:
    """A trace as its caller may see it: without retrieval scores.

    A BM25 score depends on statistics of the whole index (how many passages hold a word, their
    mean length), hidden passages included, so a caller could watch a visible passage's score
    move as documents they cannot read are added. Ids, titles and the order stay; the operator's
    trace file (``--trace``) keeps the scores.
    """
    steps = [
        {**step, "retrieved": [{k: v for k, v in hit.items() if k != "score"} for hit in step.get("retrieved", [])]}
        for step in trace.get("steps", [])
    ]
    return {**trace, "steps": steps}


async def health(request: Request) -> Response:
    """``GET /healthz``: 200 ``ok`` while serving, 503 ``draining`` once shutdown began (so balancers stop)."""
    service: Service = request.app.state.service
    gate = service.gate
    reloader = request.app.state.reloader
    index: dict[str, Any] = {"generation": service.index.generation, "loaded_at": round(service.index.loaded_at, 3)}
    if reloader is not None and reloader.refused:
        index["refused"] = "a rebuilt index failed its checks; the previous one is serving (see the server log)"
    body = {
        "status": "draining" if gate.draining else "ok",
        "model": service.engine.lm.name,
        "retriever": service.index.retriever.name,
        "in_flight": gate.active,
        "max_concurrency": gate.limit,
        "queue_depth": gate.waiting,
        "max_queue": gate.max_queue,
        "lm_parallel": service.lm_parallel,
        "trace_store": service.traces.name.partition(":")[0],  # the kind only: no path or host
        "index": index,
    }
    return JSONResponse(body, status_code=503 if gate.draining else 200)


async def metrics(request: Request) -> Response:
    service: Service = request.app.state.service
    return PlainTextResponse(service.metrics.render(), media_type="text/plain; version=0.0.4")


async def models(request: Request) -> Response:
    """``GET /v1/models``: the one model this server answers with (OpenAI clients list it)."""
    authenticate(request)
    service: Service = request.app.state.service
    model: dict[str, Any] = {"id": service.engine.lm.name, "object": "model", "owned_by": "flare"}
    return JSONResponse({"object": "list", "data": [model]})


_VIEWER_FILES = {
    "index.html": "text/html; charset=utf-8",
    "viewer.js": "text/javascript; charset=utf-8",
    "viewer.css": "text/css; charset=utf-8",
}


def _viewer_file(name: str) -> Response:
    text = (files("flare.viewer") / name).read_text(encoding="utf-8")
    headers = {"Content-Security-Policy": VIEWER_CSP, "X-Content-Type-Options": "nosniff",
               "Cache-Control": "no-cache"}  # fmt: skip
    return Response(text, media_type=_VIEWER_FILES[name], headers=headers)


async def viewer(request: Request) -> Response:
    name = request.path_params.get("name", "index.html")
    if name not in _VIEWER_FILES:
        raise not_found("file")
    return _viewer_file(name)


async def viewer_redirect(request: Request) -> Response:
    return RedirectResponse("/viewer/", status_code=308)


ROUTES = [
    Route("/v1/answers", answers, methods=["POST"]),
    Route("/v1/traces/{trace_id}", trace, methods=["GET"]),
    Route("/v1/models", models, methods=["GET"]),
    Route("/healthz", health, methods=["GET"]),
    Route("/metrics", metrics, methods=["GET"]),
    Route("/viewer", viewer_redirect, methods=["GET"]),
    Route("/viewer/", viewer, methods=["GET"]),
    Route("/viewer/{name}", viewer, methods=["GET"]),
]
