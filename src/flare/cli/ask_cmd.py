"""``flare ask``: answer one question from an index, with citations and an optional trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from flare.cli.narrate import KeepLast, narrate
from flare.cli.options import flag_values, run_options, settings_from
from flare.config import Settings
from flare.config_file import configured_values
from flare.engine.loop import Flare, check_question
from flare.lm.base import LanguageModel, declared
from flare.lm.registry import resolve_model
from flare.retrieve.filters import Filters
from flare.retrieve.registry import open_retriever
from flare.trace.tracers import JsonlTracer, NullTracer, Tracer


@click.command()
@click.argument("question")
@click.option("--index", "index_spec", required=True, metavar="SPEC",
              help="Index built by `flare index`: a directory (BM25), or dense:DIR, hybrid:DIR, "
                   "milvus:URI#COLLECTION (see docs/backends.md).")
@click.option("--filter", "filters", multiple=True, metavar="EXPR",
              help="Metadata filter, repeatable: year=2026, acl=finance|hr, year>=2025.")
@click.option("--trace", "trace_path", type=click.Path(path_type=Path), default=None,
              help="Append the answer's trace as one JSON line to this file.")
@click.option("--trace-content", is_flag=True, help="Also record passage text in the trace.")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.option("-v", "--verbose", is_flag=True, help="Explain each step (draft, unsure words, query) on stderr.")
@run_options
def ask(
    question: str,
    index_spec: str,
    filters: tuple[str, ...],
    trace_path: Path | None,
    trace_content: bool,
    as_json: bool,
    verbose: bool,
    threads: int | None,
    **opts: Any,
) -> None:
    """Answer QUESTION from the passages in --index, citing them."""
    check_question(question)  # the cheapest mistakes first: before the index and the model load
    settings = settings_from(opts)  # a bad config file or FLARE_* variable fails first, cheaply
    flt = Filters.parse(filters)
    retriever = open_retriever(index_spec)
    retriever.check_filters(flt)  # rejects unknown filter fields before the model loads
    lm = resolve_model(settings.model, n_threads=threads)
    chosen = set(configured_values(opts.get("config_path"))) | set(flag_values(opts))
    settings, note = fit_to_model(settings, lm, chosen=chosen)
    if verbose:
        click.echo(note, err=True)
    tracer: Tracer = (
        JsonlTracer(trace_path, record_content=trace_content) if trace_path else NullTracer()
    )
    keep = KeepLast(tracer)
    engine = Flare(lm, retriever, settings, tracer=keep)
    answer = engine.answer(question, filters=flt)
    if verbose and keep.last is not None:
        narrate(keep.last)
    click.echo(json.dumps(answer.to_dict(), ensure_ascii=False, indent=2) if as_json else answer.render())
    if not as_json and answer.stop_reason != "end":
        click.echo(f"\n(stopped: {answer.stop_reason})", err=True)


TOKEN_TRIGGERS = ("min", "mean", "dynamic", "content")


def fit_to_model(settings: Settings, lm: LanguageModel, *, chosen: set[str]) -> tuple[Settings, str]:
    """The settings to run ``lm`` with, and a line saying what the model can do and what was picked.

    A trigger nobody chose (flag, config file or environment) that reads token probabilities the
    model does not report becomes the evidence trigger; a chosen one is left to fail with its
    one-line error.
    """
    logprobs = lm.supports_logprobs
    model = declared(lm)
    can = f"token logprobs {'yes' if logprobs else 'no'}, scoring {'yes' if model.supports_scoring else 'no'}"
    how = model.continuation
    if how is not None:
        can += f", continues the answer by {how}"
    picked = ""
    if not logprobs and settings.trigger in TOKEN_TRIGGERS and "trigger" not in chosen:
        settings = settings.with_overrides(trigger="support")
        picked = " (picked: the token triggers need logprobs)"
    source = "chosen" if "trigger" in chosen else "default"
    return settings, f"model {lm.name}: {can}; method={settings.method}, trigger={settings.trigger} ({source}){picked}"
