"""Steps every answering route shares: authenticate, read and validate the body, build the
trusted filters and budgets, start the run, and turn worker failures into HTTP errors."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from flare.config import Settings
from flare.engine.events import Finished
from flare.errors import ConfigError, FilterError, FlareError, InputError
from flare.retrieve.filters import Filters
from flare.server.auth import KeyStore, Principal
from flare.server.errors import ApiError, unauthorized
from flare.server.limits import Limits, read_body
from flare.server.request_settings import request_settings
from flare.server.runner import Failure, Item, Run, Service
from flare.types import Answer

M = TypeVar("M", bound=BaseModel)
DISCONNECT_POLL = 0.5  # seconds between checks that a non-streaming client is still there
MAX_FILTERS = 16
CLIENT_CLOSED = 499  # nginx's "client closed request": logged, never seen by a client


class ClientGone(Exception):
    """The client of a non-streaming request disconnected; its run was cancelled."""


def authenticate(request: Request) -> Principal:
    keys: KeyStore = request.app.state.keys
    principal = keys.authenticate(request.headers.get("authorization"), request.headers.get("x-api-key"))
    if principal is None:
        raise unauthorized()
    request.state.principal = principal.name
    return principal


async def parse(request: Request, model: type[M]) -> M:
    limits: Limits = request.app.state.limits
    raw = await read_body(request, limits.max_body_bytes)
    try:
        data = json.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "invalid_request_error", "the body is not valid JSON") from None
    try:
        return model.model_validate(data)
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in err.errors()[:5])
        raise ApiError(400, "invalid_request_error", f"invalid request: {problems}") from None


def trusted_filters(service: Service, principal: Principal, exprs: list[str]) -> Filters:
    """The principal's filters narrowed by the request's: a request can never widen them (C1)."""
    if len(exprs) > MAX_FILTERS:
        raise ApiError(400, "invalid_request_error", f"at most {MAX_FILTERS} filters per request")
    try:
        flt = principal.filters.narrow(Filters.parse(exprs))
        service.retriever.check_filters(flt)  # rejects unknown fields before any work
    except FlareError as err:
        raise ApiError(400, "invalid_request_error", str(err)) from None
    return flt


def settings_for(request: Request, given: dict[str, Any]) -> Settings:
    """The server's settings with the request's applied by each setting's request policy."""
    service: Service = request.app.state.service
    limits: Limits = request.app.state.limits
    return request_settings(service.engine.settings, limits, given)


def error_for(error: BaseException, request: Request) -> ApiError:
    """The HTTP error for a worker failure; internal details stay in the server log."""
    if isinstance(error, InputError | FilterError | ConfigError):
        return ApiError(400, "invalid_request_error", str(error))
    rid = getattr(request.state, "request_id", "?")
    return ApiError(500, "internal_error", f"internal error (request {rid}); see the server log")


async def first_item(run: Run, request: Request) -> Item | None:
    """Wait briefly for the run's first item so that an early failure becomes an HTTP error."""
    item = await run.first(timeout=1.0)
    if isinstance(item, Failure):
        raise error_for(item.error, request)
    return item


async def collect(run: Run, request: Request, first: Item | None) -> Answer:
    """Wait for the answer of a non-streaming request, cancelling it if the client leaves.

    ``first`` is the item :func:`first_item` already took off the queue (it may be the end).
    """
    if isinstance(first, Finished):
        return first.answer
    items = run.items(heartbeat=DISCONNECT_POLL)
    async with contextlib.aclosing(items):
        async for item in items:
            if item is None:
                if await request.is_disconnected():
                    run.cancel()
                    raise ClientGone
            elif isinstance(item, Failure):
                raise error_for(item.error, request)
            elif isinstance(item, Finished):
                return item.answer
    raise ClientGone  # the run ended without an answer: it was cancelled (server shutdown)


async def chained(first: Item | None, run: Run, heartbeat: float) -> AsyncGenerator[Item | None, None]:
    """``first`` (already taken off the queue) followed by the rest of the run's items."""
    try:
        if first is not None:
            yield first
        items = run.items(heartbeat=heartbeat)
        async with contextlib.aclosing(items):
            async for item in items:
                yield item
    finally:
        run.cancel()  # a no-op after the end; stops generation if the client went away
