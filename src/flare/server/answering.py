"""The one answering flow behind ``/v1/answers`` and ``/v1/chat/completions``.

Both endpoints do the same thing and differ only in their wire format: check the request
(:mod:`flare.server.common`), take an answer slot from the gate (:mod:`flare.server.admission`)
or wait for one in the queue, start a run under the trusted filters and the request's settings,
wait briefly for its first item (so an early failure is an HTTP error, not a broken stream), then
either stream the run's items through the endpoint's encoder or wait for the answer — cancelling
the run when the client leaves — and render it.

A request that has to wait for a slot and asked for a stream gets its response at once: a
:class:`Queued` item first (the encoder turns it into a ``queued`` event), keep-alives while it
waits, then the run's items; a refusal while waiting (queue timeout, shutdown) is then an error
item. A JSON request waits before its response starts, so a refusal is its HTTP status.

Example, an endpoint in a few lines::

    return await answer(request, principal, question, body.filters, request_values(body), stream=body.stream,
                        encode=lambda items: my_sse(items), render=lambda answer, settings: JSONResponse(...))
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from flare.config import Settings
from flare.engine.events import Finished
from flare.retrieve.filters import Filters
from flare.server import sse
from flare.server.admission import Gate, Waiter
from flare.server.auth import Principal
from flare.server.common import error_for, settings_for, trusted_filters
from flare.server.errors import ApiError
from flare.server.limits import Limits
from flare.server.runner import Failure, Item, Run, Service
from flare.types import Answer

DISCONNECT_POLL = 0.5  # seconds between checks that a non-streaming client is still there
CLIENT_CLOSED = 499  # nginx's "client closed request": logged, never seen by a client
FIRST_ITEM_WAIT = 1.0  # seconds to wait for the first item before the response starts


@dataclass(frozen=True, slots=True)
class Queued:
    """The request waits for a slot: ``position`` 1 is next; ``depth`` requests wait in all."""

    position: int
    depth: int


Encoder = Callable[[AsyncIterator[Item | Queued | None]], AsyncIterator[bytes]]
"""Turns a run's items (``None``: nothing new for a heartbeat) into the endpoint's stream."""


class ClientGone(Exception):
    """The client of a non-streaming request disconnected; its run was cancelled."""


async def answer(
    request: Request,
    principal: Principal,
    question: str,
    filters: list[str],
    given: dict[str, Any],
    *,
    stream: bool,
    encode: Encoder,
    render: Callable[[Answer, Settings], Response],
) -> Response:
    """Answer ``question`` under the principal's filters narrowed by ``filters``.

    ``given`` are the settings the request chose, applied by their request policies. Checks
    fail as HTTP errors before a slot is taken; with no slot free the request waits in the queue.
    """
    service: Service = request.app.state.service
    gate = service.gate
    if gate.draining:
        gate.try_enter()  # raises the 503 of a draining server
    flt = await trusted_filters(service, principal, filters)
    settings = settings_for(request, given)
    limits: Limits = request.app.state.limits
    waiter = gate.try_enter()
    if waiter is None:
        started = await launch(service, request, principal, question, flt, settings)
        return await respond(started, request, stream=stream, encode=encode, render=render)
    if stream:
        items = queued(service, waiter, request, principal, question, flt, settings, limits.heartbeat_seconds)
        return StreamingResponse(encode(items), media_type=sse.MEDIA_TYPE, headers=sse.HEADERS)
    try:
        await wait_for_slot(gate, waiter, request)
    except ClientGone:
        return Response(status_code=CLIENT_CLOSED)
    started = await launch(service, request, principal, question, flt, settings)
    return await respond(started, request, stream=False, encode=encode, render=render)


async def launch(
    service: Service, request: Request, principal: Principal, question: str, flt: Filters, settings: Settings
) -> Started:
    """Start the run in the slot the caller holds and wait briefly for its first item."""
    run = service.start(principal, question, flt, settings)
    try:
        first = await first_item(run, request)
    except BaseException:
        run.cancel()
        raise
    return Started(run, first, settings)


async def wait_for_slot(gate: Gate, waiter: Waiter, request: Request) -> None:
    """Wait in the queue for a JSON request; :class:`ClientGone` if the client leaves first."""
    try:
        while not await gate.wait(waiter, DISCONNECT_POLL):
            if await request.is_disconnected():
                raise ClientGone
    except BaseException:
        gate.abandon(waiter)  # idempotent: the wait may have given the place back already
        raise


async def queued(
    service: Service,
    waiter: Waiter,
    request: Request,
    principal: Principal,
    question: str,
    flt: Filters,
    settings: Settings,
    heartbeat: float,
) -> AsyncGenerator[Item | Queued | None, None]:
    """A streamed request in the queue: :class:`Queued`, keep-alives, then the run's items."""
    gate = service.gate
    admitted = False
    try:
        yield Queued(gate.position(waiter), gate.waiting)
        while not await gate.wait(waiter, heartbeat):
            yield None
        admitted = True
    except ApiError as err:  # queue timeout or shutdown: the wait already gave up its place
        yield Failure(err)
        return
    finally:
        if not admitted:
            gate.abandon(waiter)  # the client left (the stream was closed) while waiting
    try:
        run = service.start(principal, question, flt, settings)
    except Exception as err:  # the slot was released by start
        yield Failure(err)
        return
    async for item in chained(None, run, heartbeat):
        yield item


@dataclass(slots=True)
class Started:
    """A run that has started: its first item (already taken off its queue) and its settings."""

    run: Run
    first: Item | None
    settings: Settings


async def respond(
    started: Started, request: Request, *, stream: bool, encode: Encoder, render: Callable[[Answer, Settings], Response]
) -> Response:
    """Stream the run through ``encode``, or wait for its answer and ``render`` it (with the settings it ran under)."""
    if stream:
        limits: Limits = request.app.state.limits
        items = chained(started.first, started.run, limits.heartbeat_seconds)
        return StreamingResponse(encode(items), media_type=sse.MEDIA_TYPE, headers=sse.HEADERS)
    try:
        answer = await collect(started.run, request, started.first)
    except ClientGone:
        return Response(status_code=CLIENT_CLOSED)
    return render(answer, started.settings)


async def first_item(run: Run, request: Request) -> Item | None:
    """Wait briefly for the run's first item so that an early failure becomes an HTTP error."""
    item = await run.first(timeout=FIRST_ITEM_WAIT)
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
