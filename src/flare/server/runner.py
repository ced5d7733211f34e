"""Running one answer in a worker thread and handing its events to the event loop.

The engine is a synchronous generator, so each answer runs in its own worker thread, which
pushes events to an asyncio queue. How LM calls of concurrent answers meet depends on the model:

* a backend that serves calls in parallel says how many with ``max_parallel`` (an
  OpenAI-compatible server, xllamacpp's slots): up to that many answers' LM calls run at once;
* a model without it (llama.cpp in-process: one instance is not thread-safe) gets one call at a
  time, so answers interleave call by call;
* either way every call goes through :class:`SharedLM`, and every search through one lock
  (:class:`SharedRetriever`: searches take milliseconds). Per-answer state — the prompt prefix,
  the trace, the budgets — lives in the answer's own engine, never in the shared wrapper;
* when the client goes away the run is cancelled: the LM stops after its current token, the
  next LM call raises :class:`Cancelled`, and the engine's generator is closed;
* every run keeps the index it started with (:class:`ServedIndex`): a reload swaps the service's
  index for new runs only, and the old one is released when its last run ends;
* answers run on daemon threads kept between answers (:class:`Workers`): starting a thread
  blocks its caller until the OS first runs the thread, and the caller is the event loop;
* a run cut by the end of the shutdown grace period (:meth:`Service.cut_all`) ends with a 503
  error item and stores a trace of what it had sent, ``stop_reason="shutdown"``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
import uuid
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass
from typing import Any

from flare.config import Settings
from flare.engine.events import Event, Finished, SentenceAccepted
from flare.engine.loop import Flare
from flare.lm.base import ForwardingLM, LanguageModel, StopWhen, parallel_calls
from flare.retrieve.base import Retriever
from flare.retrieve.filters import NO_FILTERS, Filters
from flare.server.admission import Gate
from flare.server.auth import Principal
from flare.server.errors import ApiError
from flare.server.metrics import Metrics
from flare.server.traces import CaptureTracer, TraceStore
from flare.trace.schema import TraceRecord
from flare.trace.tracers import NullTracer, Tracer
from flare.types import Completion, Hit

log = logging.getLogger("flare.server")
_POLL = 0.1  # seconds between checks for cancellation while waiting for the model


class Cancelled(BaseException):
    """The client went away: stop generating (a BaseException so no handler swallows it)."""


class SharedLM(ForwardingLM):
    """One model shared by all answers: at most ``slots`` calls at once; a cancelled run stops."""

    def __init__(self, lm: LanguageModel, slots: threading.Semaphore, cancel: threading.Event) -> None:
        super().__init__(lm)
        self._slots, self._cancel = slots, cancel

    @contextlib.contextmanager
    def _using(self, prompt: str | None) -> Iterator[LanguageModel]:
        """The model, in a slot (waiting for one stops when the run is cancelled)."""
        while not self._slots.acquire(timeout=_POLL):
            if self._cancel.is_set():
                raise Cancelled
        try:
            if self._cancel.is_set():
                raise Cancelled
            yield self.inner
        finally:
            self._slots.release()

    def _stop_when(self, stop_when: StopWhen | None) -> StopWhen:
        def until(text: str) -> bool:
            return self._cancel.is_set() or (stop_when is not None and stop_when(text))

        return until

    def _done(self, c: Completion, *, scored: bool) -> Completion:
        if self._cancel.is_set():
            raise Cancelled  # the completion may have been cut short: it must not be used
        return c


class SharedRetriever:
    """A retriever shared by all answers; searches are serialised (they take milliseconds)."""

    def __init__(self, retriever: Retriever) -> None:
        self.retriever = retriever
        self.name = retriever.name
        self._lock = threading.Lock()

    def search(self, query: str, *, k: int, filters: Filters = NO_FILTERS) -> list[Hit]:
        with self._lock:
            return self.retriever.search(query, k=k, filters=filters)

    def check_filters(self, filters: Filters) -> None:
        with self._lock:  # Milvus connects on first use; an update may swap the field list
            self.retriever.check_filters(filters)


class Workers:
    """Daemon threads that run answers, each kept for the next answer until ``idle_exit`` s idle.

    ``Thread.start()`` waits until the new thread has run: on a busy machine that is an OS
    scheduling delay, and the caller here is the event loop (``/healthz`` and every stream wait
    with it). A thread that is idle takes the next answer without that wait. Threads are daemons,
    as the answers' own were, so an LM call stuck at exit cannot hold the process.
    """

    def __init__(self, idle_exit: float = 60.0) -> None:
        self.idle_exit = idle_exit
        self._tasks: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # threads waiting for a task, less the tasks queued for them

    @property
    def idle(self) -> int:
        with self._lock:
            return self._idle

    def submit(self, task: Any) -> None:
        """Run ``task()`` on an idle thread, else on a new one."""
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
                self._tasks.put(task)
                return
        threading.Thread(target=self._serve, args=(task,), name="flare-answer", daemon=True).start()

    def _serve(self, task: Any) -> None:
        while True:
            try:
                task()
            except BaseException:  # a task reports its own failures; the thread stays usable
                log.exception("answer worker task failed")
            task = None  # drop the finished run while waiting
            with self._lock:
                self._idle += 1
            try:
                task = self._tasks.get(timeout=self.idle_exit)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # no task is on its way to this thread: leave
                        self._idle -= 1
                        return
                task = self._tasks.get()  # one was queued as the wait ended: it is this thread's


@dataclass(frozen=True, slots=True)
class ServedIndex:
    """The index answers start on: one generation of it (1 at start-up, +1 per reload)."""

    retriever: SharedRetriever
    generation: int
    loaded_at: float  # Unix seconds


@dataclass(frozen=True, slots=True)
class Failure:
    """The worker raised ``error``; the route turns it into an HTTP or SSE error."""

    error: BaseException


_END = object()
Item = Event | Failure


class Service:
    """Everything the routes share: the engine, locks, the gate, the index, traces and metrics.

    The slot of a run is taken by the caller (:mod:`flare.server.answering`, through the gate)
    and released here when the run's worker ends.
    """

    def __init__(self, engine: Flare, gate: Gate, traces: TraceStore, metrics: Metrics) -> None:
        self.engine = engine
        self.gate = gate
        self.traces = traces
        self.metrics = metrics
        self.lm_parallel = parallel_calls(engine.lm)
        self.lm_slots = threading.BoundedSemaphore(self.lm_parallel)
        self.index = ServedIndex(SharedRetriever(engine.retriever), 1, time.time())
        self.forward: Tracer | None = None if isinstance(engine.tracer, NullTracer) else engine.tracer
        self.workers = Workers()
        self._runs: set[Run] = set()
        self._runs_lock = threading.Lock()
        self._idle = threading.Condition(self._runs_lock)

    @property
    def retriever(self) -> SharedRetriever:
        """The current index's retriever (what a new answer would search)."""
        return self.index.retriever

    @property
    def running(self) -> int:
        """Runs whose worker has not ended yet."""
        with self._runs_lock:
            return len(self._runs)

    def swap_index(self, retriever: Retriever) -> ServedIndex:
        """Serve ``retriever`` to answers that start from now on; runs in flight keep theirs."""
        self.index = ServedIndex(SharedRetriever(retriever), self.index.generation + 1, time.time())
        return self.index

    def start(
        self,
        principal: Principal,
        question: str,
        filters: Filters,
        settings: Settings,
        index: ServedIndex | None = None,
    ) -> Run:
        """Start generating in a worker thread; the caller holds a slot of the gate, which the run releases."""
        run: Run | None = None
        try:
            run = Run(self, principal, question, filters, settings, index or self.index)
            with self._runs_lock:
                self._runs.add(run)
            run.start()
        except BaseException:
            if run is not None:
                with self._runs_lock:
                    self._runs.discard(run)
            self.gate.leave()
            raise
        return run

    def cancel_all(self) -> None:
        """Stop every run at once (the server is going away)."""
        for run in self._snapshot():
            run.cancel()

    def cut_all(self) -> int:
        """End every run for shutdown: each sends a clean 503 error and stores what it had; how many."""
        runs = self._snapshot()
        for run in runs:
            run.cancel("shutdown")
        return len(runs)

    def wait_idle(self, timeout: float) -> bool:
        """Block until no run is left (True) or ``timeout`` seconds passed (False)."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._runs:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def _snapshot(self) -> list[Run]:
        with self._runs_lock:
            return list(self._runs)

    def _finished(self, run: Run) -> None:
        with self._runs_lock:
            self._runs.discard(run)
            self._idle.notify_all()
        self.gate.leave(released=run.ended())


class Run:
    """One answer in progress. Iterate :meth:`items` on the event loop; :meth:`cancel` to stop."""

    def __init__(
        self,
        service: Service,
        principal: Principal,
        question: str,
        filters: Filters,
        settings: Settings,
        index: ServedIndex,
    ) -> None:
        self.id = uuid.uuid4().hex
        self.service = service
        self.index = index
        self.reason = ""  # why it was cancelled: "" (the client left) or "shutdown"
        self.sent: list[SentenceAccepted] = []
        self.principal = principal
        self.question = question
        self.filters = filters
        self.settings = settings
        self.cancelled = threading.Event()
        self._state = threading.Lock()
        self._ended = self._releasing = False
        self.capture = CaptureTracer(service.forward)
        self.started = time.perf_counter()
        self.wall_started = time.time()
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[object] = asyncio.Queue()

    def start(self) -> None:
        self.service.workers.submit(self._work)

    def cancel(self, reason: str = "") -> None:
        with self._state:
            if self.cancelled.is_set() or self._ended:
                return
            self.reason = reason
            self.cancelled.set()
            self._releasing = True
        self.service.gate.note_releasing()  # its slot frees as soon as the model stops

    def ended(self) -> bool:
        """Mark the run ended (its worker is done); True if it was counted as releasing its slot."""
        with self._state:
            self._ended = True
            return self._releasing

    async def first(self, timeout: float) -> Item | None:
        """The first item if it comes within ``timeout`` seconds (it is not seen again)."""
        try:
            item = await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            return None
        if item is _END:
            self._queue.put_nowait(_END)
            return None
        assert isinstance(item, Event | Failure)
        return item

    async def items(self, heartbeat: float | None = None) -> AsyncGenerator[Item | None, None]:
        """Every item until the end; None when ``heartbeat`` seconds passed without one.

        Leaving the iteration early (client gone, response cancelled) cancels the run.
        """
        try:
            while True:
                get = asyncio.ensure_future(self._queue.get())
                done, _ = await asyncio.wait({get}, timeout=heartbeat)
                if not done:
                    get.cancel()
                    yield None
                    continue
                item = get.result()
                if item is _END:
                    return
                assert isinstance(item, Event | Failure)
                yield item
        finally:
            self.cancel()

    def _push(self, item: object) -> None:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:  # the event loop is closed: nobody is listening any more
            self.cancelled.set()

    def _work(self) -> None:
        service = self.service
        base = service.engine
        engine = Flare(
            SharedLM(base.lm, service.lm_slots, self.cancelled),
            self.index.retriever,
            self.settings,
            template=base.template,
            tracer=self.capture,
        )
        outcome, final = "cancelled", None
        events = engine.stream(self.question, filters=self.filters)
        try:
            for event in events:
                if self.cancelled.is_set():
                    break
                if isinstance(event, Finished):
                    final, outcome = event, "finished"
                    self._record(event)
                    break  # the last event: it goes out once the run has really ended (below)
                if isinstance(event, SentenceAccepted):
                    self.sent.append(event)
                self._push(event)
        except Cancelled:
            pass
        except Exception as err:
            outcome = "error"
            log.exception("answer failed", extra={"fields": {"principal": self.principal.name}})
            self._push(Failure(err))
        finally:
            close = getattr(events, "close", None)
            if callable(close):
                with contextlib.suppress(Cancelled):
                    close()  # runs the engine's cleanup; it raises Cancelled if it calls the LM
            if outcome == "cancelled" and self.reason == "shutdown":
                outcome = "cut"
                service.metrics.inc("flare_shutdown_cut_total")
                self._push(Failure(self._cut()))
            elif outcome == "cancelled":
                service.metrics.inc("flare_cancelled_total")
            elif outcome == "error":
                service.metrics.inc("flare_errors_total")
            service._finished(self)
            fields = {
                "event": "answer",
                "outcome": outcome,
                "principal": self.principal.name,
                "seconds": round(time.perf_counter() - self.started, 4),
            }
            if final is not None:
                answer = final.answer
                fields.update(
                    trace_id=answer.trace_id,
                    stop_reason=answer.stop_reason,
                    sentences=len(answer.sentences),
                    retrievals=answer.retrievals,
                    lm_calls=answer.lm_calls,
                )
            log.info("answer %s", outcome, extra={"fields": fields})
            # A client that has its answer sees a freed slot, counted metrics and the log line.
            if final is not None:
                self._push(final)
            self._push(_END)

    def _record(self, event: Finished) -> None:
        trace = self.capture.trace
        if trace is not None:
            self._store(trace)
        seconds = time.perf_counter() - self.started
        self.service.metrics.record_answer(event.answer.to_dict(), trace, seconds)

    def _store(self, trace: dict[str, Any]) -> None:
        try:
            self.service.traces.put(self.principal.name, trace)
        except Exception:  # the answer stands; the lost trace is logged and counted
            self.service.metrics.inc("flare_trace_store_errors_total")
            self.service.metrics.inc("flare_traces_lost_total")
            log.exception("trace not stored", extra={"fields": {"trace_id": trace.get("trace_id"),
                                                                "store": self.service.traces.name}})  # fmt: skip

    def _cut(self) -> ApiError:
        """Store the trace of an answer cut at shutdown (what it had sent) and say so to the client.

        The engine's own trace is only written when an answer finishes, so this record holds the
        run's settings and the sentences the client received, without the steps.
        """
        base = self.service.engine
        text = " ".join(e.sentence.text for e in self.sent)
        record = TraceRecord(
            trace_id=self.id,
            question=self.question,
            method=self.settings.method,
            model=base.lm.name,
            retriever=self.index.retriever.name,
            filters=str(self.filters),
            settings=self.settings.as_dict(),
            answer=text,
            rendered=text,
            stop_reason="shutdown",
            seconds=round(time.perf_counter() - self.started, 4),
            started_at=self.wall_started,
        )
        self._store(record.to_dict())
        return ApiError(
            503,
            "server_shutting_down",
            f"the server shut down before the answer was finished, after {len(self.sent)} sentences "
            f"(trace {self.id}); ask again",
            headers={"Retry-After": "1"},
        )
