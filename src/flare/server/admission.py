"""Admission: a fixed number of answer slots, a bounded queue in front of them, and draining.

An answering request takes a slot at once when one is free and nobody is waiting; otherwise it
waits in a first-come-first-served queue of at most ``max_queue`` requests for up to
``queue_timeout`` seconds. Beyond that it gets ``429`` with a ``Retry-After`` worked out from the
measured answer rate (how long until the requests ahead of it are likely done). A waiting client
that disconnects leaves the queue. When the server drains (SIGTERM) every new or waiting request
gets ``503`` with a ``Retry-After``.

Slots are released from the answer's worker thread when generation has really stopped, not when
the response ends, so a client that disconnects frees its slot only once the model is free again.
Until then that slot counts as *releasing*: the queue takes one more waiter per releasing slot,
so a client that hangs up and asks again at once waits for its old slot instead of getting 429.
A released slot goes straight to the first waiter, so a request arriving meanwhile cannot jump
the queue.

Example::

    gate = Gate(limit=4, max_queue=8, queue_timeout=30.0)
    waiter = gate.try_enter()            # None: a slot is ours; else we are in the queue
    if waiter is not None:
        while not await gate.wait(waiter, timeout=0.5):
            ...                          # check the client is still there, send a keep-alive
    try:
        run_the_answer()
    finally:
        gate.leave()
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import math
import threading
import time
from collections.abc import Callable

from flare.server.errors import ApiError
from flare.server.metrics import Metrics

__all__ = ["AnswerRate", "Gate", "Waiter"]

RATE_WINDOW = 64  # answers the rate is measured over
RETRY_AFTER_MAX = 300  # seconds: never tell a client to stay away longer than this


class AnswerRate:
    """Answers per second over the last :data:`RATE_WINDOW` slot releases.

    The span runs from the oldest release kept to *now*, so a server that stopped finishing
    answers sees its rate fall instead of keeping the last good figure.
    """

    def __init__(self, window: int = RATE_WINDOW, clock: Callable[[], float] = time.monotonic) -> None:
        self._times: collections.deque[float] = collections.deque(maxlen=window)
        self._clock = clock

    def record(self) -> None:
        self._times.append(self._clock())

    def per_second(self) -> float | None:
        """The rate, or None before two answers have finished."""
        if len(self._times) < 2:
            return None
        span = self._clock() - self._times[0]
        return len(self._times) / span if span > 0 else None

    def retry_after(self, ahead: int) -> int:
        """Whole seconds until ``ahead`` more answers are likely to finish (1 when unmeasured)."""
        rate = self.per_second()
        if rate is None:
            return 1
        return max(1, min(RETRY_AFTER_MAX, math.ceil(ahead / rate)))


class Waiter:
    """A request in the queue: its future is resolved on its event loop when a slot is its."""

    __slots__ = ("future", "granted", "loop", "since")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.future: asyncio.Future[None] = loop.create_future()
        self.granted = False
        self.since = time.monotonic()


class Gate:
    """``limit`` answer slots, a queue of ``max_queue`` waiters, and the drain switch.

    Thread-safe: :meth:`leave` is called from worker threads; everything else on the event loop.
    ``metrics`` (optional) receives ``flare_rejected_total{reason}``, ``flare_queue_waits_total``
    and the ``flare_queue_wait_seconds`` histogram.
    """

    def __init__(
        self, limit: int, max_queue: int = 0, queue_timeout: float = 30.0, metrics: Metrics | None = None
    ) -> None:
        self.limit = limit
        self.max_queue = max_queue
        self.queue_timeout = queue_timeout
        self.rate = AnswerRate()
        self._metrics = metrics
        self._lock = threading.Lock()
        self._active = 0
        self._releasing = 0  # slots of cancelled answers whose model call has not stopped yet
        self._queue: collections.deque[Waiter] = collections.deque()
        self._draining: float | None = None  # monotonic time the drain ends, once it started

    @property
    def active(self) -> int:
        """Slots in use."""
        return self._active

    @property
    def waiting(self) -> int:
        """Requests in the queue."""
        return len(self._queue)

    @property
    def draining(self) -> bool:
        return self._draining is not None

    def try_enter(self) -> Waiter | None:
        """Take a slot (None) or a place in the queue (a :class:`Waiter`); else raise 429 or 503.

        Call on the event loop: the waiter's future belongs to the running loop.
        """
        with self._lock:
            if self._draining is not None:
                self._count("flare_rejected_total", reason="draining")
                raise self._drain_error()
            if self._active < self.limit and not self._queue:
                self._active += 1
                return None
            if len(self._queue) >= self.max_queue + self._releasing:
                reason = "queue_full" if self.max_queue else "concurrency"
                raise self._busy(reason, f"{self._active} answers in progress (limit {self.limit})"
                                 + (f" and {len(self._queue)} waiting (limit {self.max_queue})"
                                    if self.max_queue else ""))  # fmt: skip
            waiter = Waiter(asyncio.get_running_loop())
            self._queue.append(waiter)
        self._count("flare_queue_waits_total")
        return waiter

    def position(self, waiter: Waiter) -> int:
        """1 for the first in the queue; 0 once the waiter is no longer in it."""
        with self._lock:
            try:
                return self._queue.index(waiter) + 1
            except ValueError:
                return 0

    async def wait(self, waiter: Waiter, timeout: float) -> bool:
        """True once the waiter holds a slot; False if ``timeout`` seconds passed first.

        Raises 503 when the server starts draining, and 429 once the waiter has been in the
        queue for ``queue_timeout`` seconds (it then leaves the queue). Any exception or
        cancellation here (the client left) gives the place, or a slot just granted, back.
        """
        try:
            left = self.queue_timeout - (time.monotonic() - waiter.since)
            if left <= 0:
                raise self._busy("queue_timeout", f"no answer slot came free within {self.queue_timeout:g} s")
            try:
                await asyncio.wait_for(asyncio.shield(waiter.future), min(timeout, left))
            except TimeoutError:
                return False
        except BaseException:
            self.abandon(waiter)
            raise
        if self._metrics is not None:
            self._metrics.observe("flare_queue_wait_seconds", time.monotonic() - waiter.since)
        return True

    def abandon(self, waiter: Waiter) -> None:
        """The waiter gives up: leave the queue, or pass on the slot it was just granted."""
        with self._lock:
            if waiter.granted:
                waiter.granted = False
                self._release()
            else:
                with contextlib.suppress(ValueError):
                    self._queue.remove(waiter)
        if not waiter.future.done():
            waiter.future.cancel()

    @property
    def releasing(self) -> int:
        """Slots of cancelled answers whose model call has not stopped yet."""
        return self._releasing

    def note_releasing(self) -> None:
        """An answer in a slot was cancelled: its slot will be free once its model call stops."""
        with self._lock:
            self._releasing += 1

    def leave(self, *, released: bool = False) -> None:
        """An answer has stopped: its slot goes to the first waiter, else becomes free.

        ``released``: the answer had been counted by :meth:`note_releasing`.
        """
        self.rate.record()
        with self._lock:
            if released:
                self._releasing = max(0, self._releasing - 1)
            self._release()

    def drain(self, seconds: float) -> None:
        """Refuse new requests from now on and fail every waiter with 503 (Retry-After: ``seconds``)."""
        with self._lock:
            self._draining = time.monotonic() + seconds
            waiters, self._queue = list(self._queue), collections.deque()
            error = self._drain_error()
        for waiter in waiters:
            self._count("flare_rejected_total", reason="draining")
            waiter.loop.call_soon_threadsafe(_fail, waiter.future, error)

    def _release(self) -> None:
        """Holding the lock: hand one slot to the first waiter, or free it."""
        if self._queue and self._draining is None:
            waiter = self._queue.popleft()
            waiter.granted = True
            waiter.loop.call_soon_threadsafe(_grant, waiter.future)
        else:
            self._active = max(0, self._active - 1)

    def _busy(self, reason: str, what: str) -> ApiError:
        self._count("flare_rejected_total", reason=reason)
        retry = self.rate.retry_after(len(self._queue) + 1)
        return ApiError(429, "rate_limit_exceeded", f"the server is busy: {what}; retry in {retry} s",
                        headers={"Retry-After": str(retry)})  # fmt: skip

    def _drain_error(self) -> ApiError:
        left = 0.0 if self._draining is None else self._draining - time.monotonic()
        retry = max(1, math.ceil(left))
        return ApiError(503, "server_shutting_down", "the server is shutting down; retry on another replica "
                        "or once it is back", headers={"Retry-After": str(retry)})  # fmt: skip

    def _count(self, name: str, **labels: str) -> None:
        if self._metrics is not None:
            self._metrics.inc(name, 1.0, **labels)


def _grant(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _fail(future: asyncio.Future[None], error: ApiError) -> None:
    if not future.done():
        future.set_exception(error)
