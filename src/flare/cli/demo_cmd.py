"""``flare demo``: index the bundled example handbook and answer its sample questions."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

import click

from flare.cli.narrate import KeepLast, narrate
from flare.cli.options import run_options, settings_from
from flare.engine.loop import Flare
from flare.lm.registry import resolve_model
from flare.retrieve.corpus import load_corpus
from flare.retrieve.filters import Filters
from flare.retrieve.tantivy_index import TantivyRetriever, build_index
from flare.trace.tracers import JsonlTracer

EXAMPLES = files("flare") / "data" / "examples"


@click.command()
@click.option("--workdir", type=click.Path(path_type=Path), default=Path(".flare/demo"),
              show_default=True, help="Where the demo index and trace are written.")
@run_options
def demo(workdir: Path, threads: int | None, **opts: Any) -> None:
    """Build an index of the bundled handbook (English and Chinese) and answer sample questions.

    The handbook is made up, so the model cannot know its facts: watch it retrieve exactly
    where it is unsure. Each question runs as the "staff" group, so finance-only passages
    stay invisible.
    """
    index_dir = workdir / "index"
    trace_path = workdir / "trace.jsonl"
    passages = load_corpus(Path(str(EXAMPLES / "handbook.jsonl")))
    build_index(passages, index_dir, progress=False)
    click.echo(f"Indexed {len(passages)} passages into {index_dir}\n")
    settings = settings_from(opts)
    engine = Flare(
        resolve_model(settings.model, n_threads=threads),
        TantivyRetriever(index_dir),
        settings,
        tracer=(keep := KeepLast(JsonlTracer(trace_path))),
    )
    permissions = Filters.any_of("acl", ["staff"])
    questions = (EXAMPLES / "questions.txt").read_text(encoding="utf-8").splitlines()
    for q in filter(None, (q.strip() for q in questions)):
        click.echo(f"Q: {q}")
        answer = engine.answer(q, filters=permissions)
        if keep.last is not None:
            narrate(keep.last)
        click.echo(answer.render())
        click.echo(f"({answer.retrievals} retrievals, {answer.lm_calls} LM calls, stop: {answer.stop_reason})\n")
    click.echo(f"Trace of every step: {trace_path}")
