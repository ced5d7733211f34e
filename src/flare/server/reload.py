"""Serving a rebuilt index without a restart.

``flare index`` builds beside the served index and swaps the new directory in with renames
(:mod:`flare.retrieve.atomic`), so a running server can pick it up: the :class:`IndexReloader`
notices the swap (it compares the directory's identity and its params file every
``index_poll_seconds``) or is told to look (:meth:`IndexReloader.request`, what SIGHUP does in
``flare serve``). It then opens the new index in a worker thread with every check a start-up
makes — the file digests, a probe search, the key file's fields — and only when all pass does
it become the index of new answers. Answers in flight finish on the index they started with.
A new index that fails a check is refused: the old one keeps serving, the refusal is logged,
counted (``flare_index_reloads_total{outcome="refused"}``) and shown by ``/healthz``, and the
same directory is not tried again until it changes (or SIGHUP asks).

Example::

    source = IndexSource(lambda: open_retriever("idx"), watch=watch_paths("idx"))
    app = create_app(Flare(lm, source.open()), keys, Limits(index_poll_seconds=2), index=source)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio.to_thread

from flare.errors import FlareError
from flare.retrieve.atomic import PARAMS_FILE
from flare.retrieve.base import Retriever
from flare.server.metrics import Metrics
from flare.server.runner import Service

__all__ = ["IndexReloader", "IndexSource", "watch_paths"]

log = logging.getLogger("flare.server")
Signature = tuple[tuple[int, int, int, int, int], ...]
_LOCAL_KINDS = ("bm25", "dense", "hybrid")


def watch_paths(spec: str) -> list[Path]:
    """The index directories an ``--index`` spec names (none for a Milvus URI)."""
    prefix, sep, rest = spec.strip().partition(":")
    if sep and prefix in _LOCAL_KINDS:
        parts = rest.split(",") if prefix == "hybrid" else [rest]
    elif sep and prefix in ("milvus",):
        return []
    else:
        parts = [spec.strip()]
    return [Path(p.strip()).expanduser().absolute() for p in parts if p.strip()]


def signature(paths: Sequence[Path]) -> Signature | None:
    """What identifies the directories' current build; None while one is missing (mid-swap).

    A swap puts a new directory (a new inode) in place, with a new params file.
    """
    out = []
    for path in paths:
        try:
            folder = os.stat(path)
            params = os.stat(path / PARAMS_FILE)
        except OSError:
            return None
        out.append((folder.st_dev, folder.st_ino, params.st_ino, params.st_mtime_ns, params.st_size))
    return tuple(out)


class IndexSource:
    """How to open the served index again, and which directories to watch for a swap."""

    def __init__(self, opener: Callable[[], Retriever], *, watch: Sequence[Path] = ()) -> None:
        self.opener = opener
        self.watch = tuple(watch)
        self.loaded: Signature | None = None  # the build the last successful open read

    def open(self) -> Retriever:
        """Open the index; what is on disk *before* opening is what it is known to serve."""
        seen = signature(self.watch) if self.watch else None
        retriever = self.opener()
        self.loaded = seen
        return retriever

    def changed(self) -> Signature | None:
        """The directories' signature if it differs from the one served, else None."""
        if not self.watch:
            return None
        now = signature(self.watch)
        return now if now is not None and now != self.loaded else None


class IndexReloader:
    """Watches an :class:`IndexSource` and swaps a good new index into the service.

    ``check`` runs on a newly opened retriever before it is served (the key file's principals
    must fit it); an exception refuses it. :meth:`run` is the background task; :meth:`reload`
    does one attempt and says how it went.
    """

    def __init__(
        self,
        source: IndexSource,
        service: Service,
        metrics: Metrics,
        *,
        poll_seconds: float,
        check: Callable[[Retriever], None] = lambda retriever: None,
    ) -> None:
        self.source = source
        self.service = service
        self.metrics = metrics
        self.poll_seconds = poll_seconds
        self.check = check
        self.refused: str | None = None  # the last refusal, until a reload succeeds
        self._refused_sig: Signature | None = None
        self._wake = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._lock = asyncio.Lock()
        self._asked = threading.Event()

    def request(self) -> None:
        """Look for a new index now, even one refused before (thread- and signal-safe)."""
        self._asked.set()
        self._loop.call_soon_threadsafe(self._wake.set)

    async def run(self) -> None:
        """Poll (every ``poll_seconds``, if above 0) and answer requests until cancelled."""
        while True:
            timeout = self.poll_seconds if self.poll_seconds > 0 else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)
            self._wake.clear()
            forced = self._asked.is_set()
            self._asked.clear()
            changed = self.source.changed()
            if forced or (changed is not None and changed != self._refused_sig):
                await self.reload(forced=forced)

    async def reload(self, *, forced: bool = True) -> str:
        """Open the index again and serve it if every check passes: ``loaded``, ``refused`` or ``unchanged``."""
        async with self._lock:
            changed = self.source.changed()
            if not forced and changed is None:
                return "unchanged"
            try:
                retriever = await anyio.to_thread.run_sync(self._open)
            except Exception as err:
                message = err.message if isinstance(err, FlareError) else f"{type(err).__name__}: {err}"
                self.refused = message
                self._refused_sig = changed
                self.metrics.inc("flare_index_reloads_total", outcome="refused")
                fields = {"event": "index_reload", "outcome": "refused", "error": message}
                log.error("index reload refused; the previous index keeps serving", extra={"fields": fields})
                return "refused"
            served = self.service.swap_index(retriever)
            self.refused = None
            self._refused_sig = None
            self.metrics.inc("flare_index_reloads_total", outcome="loaded")
            log.info("index reloaded", extra={"fields": {"event": "index_reload", "outcome": "loaded",
                                                         "generation": served.generation}})  # fmt: skip
            return "loaded"

    def _open(self) -> Retriever:
        retriever = self.source.open()
        try:
            retriever.search("flare reload probe", k=1)
            self.check(retriever)
        except BaseException:
            self.source.loaded = None  # not served: a later look must not take it as current
            raise
        return retriever
