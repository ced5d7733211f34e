"""Options shared by the commands that run the loop (``ask``, ``demo``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from flare.config import QUERY_MODES, TRIGGERS, Settings
from flare.engine.methods import check_method, registered_methods
from flare.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])


def check_method_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Check ``--method`` against the method table when the command line is parsed (plugins count)."""
    if value is None:
        return None
    try:
        return check_method(value)
    except ConfigError as err:
        raise click.BadParameter(f"{err.message} ({err.hint})", ctx, param) from None


def run_options(func: F) -> F:
    """Decorate a command with the model and loop settings."""
    options = [
        click.option("--model", "model_spec", default=None, metavar="SPEC",
                     help="gemma3 (default), smollm2, or a path to a .gguf file."),
        click.option("--threads", type=click.IntRange(min=1), default=None,
                     help="CPU threads for the model (default: cores - 1; env FLARE_THREADS)."),
        click.option("--method", default="flare", show_default=True, metavar="NAME", callback=check_method_option,
                     help="Retrieval method: " + ", ".join(registered_methods()) + ", or a registered one."),
        click.option("--theta", type=click.FloatRange(0, 1), default=None,
                     help="Retrieve when a drafted token's probability is below this."),
        click.option("--beta", type=click.FloatRange(0, 1), default=None,
                     help="Mask drafted words below this probability when forming the query."),
        click.option("--trigger", type=click.Choice(TRIGGERS), default=None),
        click.option("--query", "query_mode", type=click.Choice(QUERY_MODES), default=None),
        click.option("-k", "--k", type=click.IntRange(min=1, max=20), default=None,
                     help="Passages per retrieval."),
        click.option("--max-retrievals", type=click.IntRange(min=0), default=None),
        click.option("--max-sentences", type=click.IntRange(min=1), default=None),
        click.option("--max-seconds", type=click.FloatRange(min=0, min_open=True), default=None),
        click.option("--keep-first-docs", is_flag=True, default=None,
                     help="Keep the question's documents in every later prompt."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def settings_from(base: Settings, opts: dict[str, Any]) -> Settings:
    """Apply the CLI's run options on top of ``base``."""
    return base.with_overrides(
        method=opts.get("method"),
        theta=opts.get("theta"),
        beta=opts.get("beta"),
        trigger=opts.get("trigger"),
        query=opts.get("query_mode"),
        k=opts.get("k"),
        max_retrievals=opts.get("max_retrievals"),
        max_sentences=opts.get("max_sentences"),
        max_seconds=opts.get("max_seconds"),
        keep_first_docs=opts.get("keep_first_docs"),
    )
