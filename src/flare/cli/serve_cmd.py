"""``flare serve``: the HTTP API (JSON, server-sent events, OpenAI-compatible chat) over an index.

Signals: SIGTERM or SIGINT drains the server (new requests get 503, answers in flight get
``--shutdown-grace`` seconds, then end with a clean error; traces are flushed) and it exits 0; a
second one cuts the answers at once. SIGHUP reloads the index (a rebuilt one is also noticed on
its own every ``--index-poll`` seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from flare.cli.options import run_options, settings_from
from flare.errors import ConfigError, CorpusIndexError, FlareError
from flare.retrieve.base import Retriever

SWITCH_INTERVAL = 0.001  # seconds the interpreter lets one thread hold the GIL (default 0.005); see serve()


@click.command()
@click.option(
    "--index",
    "index_spec",
    required=True,
    metavar="SPEC",
    help="Index built by `flare index`: a directory (BM25), or dense:DIR, hybrid:DIR, milvus:URI#COLLECTION.",
)
@click.option(
    "--keys",
    "keys_path",
    required=True,
    type=click.Path(path_type=Path),
    help="API key file (TOML or JSON): key -> principal, ACL groups, default filters.",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Keep 127.0.0.1 behind a TLS-terminating proxy.",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--max-concurrency",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Answers in progress at once; more wait in the queue.",
)
@click.option(
    "--max-queue",
    type=click.IntRange(min=0),
    default=8,
    show_default=True,
    help="Requests that may wait for an answer slot; more get HTTP 429 (0: no queue).",
)
@click.option(
    "--queue-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="Seconds a request may wait for a slot before it gets HTTP 429.",
)
@click.option(
    "--shutdown-grace",
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    help="On SIGTERM: seconds answers in flight may take to finish before they are cut.",
)
@click.option(
    "--index-poll",
    "index_poll",
    type=click.FloatRange(min=0),
    default=2.0,
    show_default=True,
    help="Seconds between looks for a rebuilt index (0: only on SIGHUP).",
)
@click.option(
    "--max-body-bytes",
    type=click.IntRange(min=1024),
    default=64_000,
    show_default=True,
    help="Largest request body; larger ones get HTTP 413.",
)
@click.option(
    "--trace",
    "trace_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Also append every answer's trace to this JSONL file (for the viewer).",
)
@click.option(
    "--trace-store",
    "trace_store",
    default=None,
    metavar="SPEC",
    help="Where served traces are kept: sqlite:PATH (default ~/.local/state/flare/traces.sqlite), "
    "postgresql://USER@HOST/DB (shared by replicas), or memory.",
)
@click.option(
    "--max-traces",
    type=click.IntRange(min=1),
    default=100_000,
    show_default=True,
    help="Traces kept; the oldest beyond this are deleted.",
)
@click.option(
    "--trace-days",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="Traces older than this many days are deleted and no longer served.",
)
@click.option(
    "--max-parallel",
    type=click.IntRange(min=1),
    default=None,
    help="LM calls run at once: openai:URL, the server's slots (default 8); xllamacpp:MODEL, its "
    "slots (default 4); an in-process model, that many copies of it (default 1), each on --threads.",
)
@click.option(
    "--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info", show_default=True
)
@run_options
def serve(
    index_spec: str,
    keys_path: Path,
    host: str,
    port: int,
    max_concurrency: int,
    max_queue: int,
    queue_timeout: float,
    shutdown_grace: float,
    index_poll: float,
    max_body_bytes: int,
    trace_path: Path | None,
    trace_store: str | None,
    max_traces: int,
    trace_days: float,
    max_parallel: int | None,
    log_level: str,
    threads: int | None,
    **opts: Any,
) -> None:
    """Serve answers over HTTP: /v1/answers, /v1/chat/completions, /v1/traces, /viewer, /metrics.

    The run options (flags, --config file, FLARE_* variables) are the defaults of every request;
    budgets (--max-seconds, --max-retrievals, --max-sentences, -k, …) are also its maxima: a
    request may lower them, never raise them.
    """
    try:
        import uvicorn

        from flare.server import KeyStore, Limits, create_app
        from flare.server.app import check_principals
        from flare.server.logs import configure
        from flare.server.reload import IndexSource, watch_paths
    except ImportError as err:
        raise ConfigError(
            f"the server needs packages that are not installed ({err.name})",
            "pip install 'flare-rag[server]'",
        ) from None
    from flare.engine.loop import Flare
    from flare.lm.base import declared
    from flare.lm.registry import resolve_model
    from flare.retrieve.registry import open_retriever
    from flare.server.traces import default_trace_path, open_trace_store
    from flare.trace.tracers import JsonlTracer

    settings = settings_from(opts)
    keys = KeyStore.load(keys_path)

    def opened() -> Retriever:
        found = open_retriever(index_spec)
        probe(found, index_spec)
        return found

    source = IndexSource(opened, watch=watch_paths(index_spec))
    retriever = source.open()
    check_principals(retriever, keys)
    limits = Limits(
        max_concurrency=max_concurrency,
        max_queue=max_queue,
        queue_timeout=queue_timeout,
        shutdown_grace=shutdown_grace,
        index_poll_seconds=index_poll,
        max_body_bytes=max_body_bytes,
        max_seconds=settings.max_seconds,
        max_retrievals=settings.max_retrievals,
        max_output_tokens=settings.max_output_tokens,
        max_sentences=settings.max_sentences,
        max_traces=max_traces,
        max_trace_age_days=trace_days,
    )

    # Everything that can fail on the operator's input fails here, as one line, before uvicorn.
    model_options: dict[str, Any] = {"n_threads": threads}
    if max_parallel is not None:
        model_options["max_parallel"] = max_parallel
    lm = resolve_model(settings.model, **model_options)
    declared(lm).load()
    store = open_trace_store(trace_store or f"sqlite:{default_trace_path()}", max_traces=limits.max_traces,
                             max_age_days=limits.max_trace_age_days)  # fmt: skip
    tracer = JsonlTracer(trace_path) if trace_path else None
    engine = Flare(lm, retriever, settings, tracer=tracer)

    configure(log_level)
    click.echo(f"flare: serving {index_spec} on http://{host}:{port} (viewer: /viewer/; "
               f"traces: {store.name})", err=True)  # fmt: skip
    app = create_app(engine, keys, limits, traces=store, index=source)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,  # flare.server writes one JSON line per request instead
        timeout_graceful_shutdown=5,  # after the drain: for connections that are still open
    )
    server = _server(config, app)
    # The event loop shares the GIL with the answer threads; each time it gives it up (every
    # socket call) it may wait a whole switch interval to get it back (5 ms by default).
    sys.setswitchinterval(SWITCH_INTERVAL)
    try:
        server.run()
    finally:
        store.close()  # the trace store is flushed and closed after the last answer
    if not server.started:
        raise SystemExit(3)  # start-up failed; the lifespan logged why


def _server(config: Any, app: Any) -> Any:
    """uvicorn's server with flare's signals: SIGTERM/SIGINT drain the app, SIGHUP reloads the index.

    uvicorn's own handlers would close the listening socket at once (new requests could not be
    told 503) and raise the signal again at exit (status 143); these drain, then exit 0.
    """
    import uvicorn

    class Server(uvicorn.Server):
        def __init__(self) -> None:
            super().__init__(config)
            self._drain: asyncio.Task[None] | None = None

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self._stop)
            loop.add_signal_handler(signal.SIGHUP, self._reload)
            try:
                yield
            finally:
                for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                    loop.remove_signal_handler(sig)

        def _stop(self) -> None:
            if self._drain is None:
                self._drain = asyncio.ensure_future(self._drain_then_exit())
            elif getattr(app.state, "service", None) is not None:
                app.state.service.cut_all()  # a second signal: end the answers now

        async def _drain_then_exit(self) -> None:
            try:
                if getattr(app.state, "service", None) is not None:  # else still starting: just stop
                    await app.state.drain()
            finally:
                self.should_exit = True

        def _reload(self) -> None:
            reloader = getattr(app.state, "reloader", None)
            if reloader is not None:
                reloader.request()

    return Server()


def probe(retriever: Retriever, spec: str) -> None:
    """Refuse to serve an index that cannot answer one search (checked once, at start-up)."""
    try:
        retriever.search("flare start-up probe", k=1)
    except FlareError:
        raise
    except Exception as err:
        raise CorpusIndexError(
            f"{spec}: the index cannot answer a probe search ({type(err).__name__}: {err})",
            "rebuild it with: flare index CORPUS --index SPEC",
        ) from None
