"""``flare eval``: FLARE and the paper's baselines side by side on QA datasets (E1–E4).

Runs every method on the same questions, model and index, appends each scored answer (with its
trace) to ``OUT/results.jsonl`` as it finishes, and writes ``OUT/report.md`` plus PNG plots.
Rerunning the same command resumes: finished examples are skipped, so Ctrl-C loses nothing.

Methods (``--method``, repeatable): ``none``, ``single``, ``flare``, ``flare-explicit``,
``flare-every`` (θ=1), ``previous-window``, ``previous-sentence``, ``decompose``, ``instruct``, or
any of them with settings, e.g. ``flare:theta=0.4,beta=0.2``. Ablations (``--ablation``):
``baselines`` (all methods), ``query-sentence`` (previous vs next sentence), ``beta``
(0, 0.2, 0.4, 0.6), ``theta`` (0 … 1), ``query`` (implicit vs explicit). ``--sweep theta=0,0.5,1``
adds FLARE runs over any setting.

Example::

    flare eval --dataset strategyqa --method none --method single --method flare --limit 20 --out runs/sqa
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import click

from flare.cli.options import flag_values, setting_options
from flare.config import Settings, setting_info
from flare.config_file import configured_values
from flare.errors import ConfigError
from flare.evaluate.datasets import DEFAULT_INDEX_CACHE, load_dataset
from flare.evaluate.harness import RESULTS_FILE, Job, read_results, run_eval, task_of
from flare.evaluate.methods import expand
from flare.evaluate.report import write_report
from flare.evaluate.world.score import truth_scores


@click.command("eval")
@click.option("--dataset", "datasets", multiple=True, required=True, metavar="NAME|PATH",
              help="Bundled dataset (2wikimultihopqa, hotpotqa, musique, strategyqa, asqa, nq_open) or a "
                   "folder with questions.jsonl and corpus.jsonl. Repeatable.")
@click.option("--method", "methods", multiple=True, metavar="SPEC",
              help="Method to run, repeatable: none, single, flare, flare-explicit, flare-every, "
                   "previous-window, previous-sentence, decompose, instruct; NAME:key=value,... for settings.")
@click.option("--ablation", "ablations", multiple=True, metavar="NAME",
              help="Add a paper ablation: baselines, query-sentence, beta, theta, query. Repeatable.")
@click.option("--sweep", "sweeps", multiple=True, metavar="KEY=V1,V2",
              help="Add FLARE runs over values of one setting, e.g. theta=0,0.2,0.4,0.6,0.8,1.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Questions per dataset.")
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True,
              help="Skip this many questions first (file order, or shuffled order with --seed).")
@click.option("--seed", type=int, default=None, help="Shuffle questions with this seed before the slice.")
@click.option("--split", default=None, metavar="NAME",
              help="Only questions whose split field is NAME (e.g. dev or test), before the slice.")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="CPU threads for the model.")
@click.option("--special-tokens/--no-special-tokens", default=True, show_default=True,
              help="Read <|im_start|> etc. in prompts as control tokens, as the chat models were trained; "
                   "safe here because evaluation passages are a trusted, fixed pool.")
@click.option("--shift-cache/--no-shift-cache", default=None,
              help="llama.cpp: move the cached question and answer past passages inserted before them instead "
                   "of evaluating them again (fewer tokens; results differ from a cold evaluation). Default: the "
                   "model's (on for the bundled Qwen models).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Any setting for every method, e.g. --set max_output_tokens=128 (same as its flag). Repeatable.")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), required=True,
              help="Report directory: results.jsonl, report.md and plots.")
@click.option("--index-cache", type=click.Path(path_type=Path), default=DEFAULT_INDEX_CACHE, show_default=True,
              help="Where each dataset's pool is indexed once and reused.")
@click.option("--force-answer/--no-force-answer", default=True, show_default=True,
              help="When an answer lacks \"So the answer is\", let the model complete that cue (no documents) "
                   "before scoring; the same for every method.")
@click.option("--retry-failed", is_flag=True, help="Run failed examples again instead of keeping them as wrong.")
@click.option("--report-only", is_flag=True, help="Only rewrite the report from OUT/results.jsonl.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
@setting_options(exclude={"method"})
def eval_command(
    datasets: tuple[str, ...],
    methods: tuple[str, ...],
    ablations: tuple[str, ...],
    sweeps: tuple[str, ...],
    limit: int | None,
    offset: int,
    seed: int | None,
    split: str | None,
    threads: int | None,
    special_tokens: bool,
    shift_cache: bool | None,
    sets: tuple[str, ...],
    out_dir: Path,
    index_cache: Path,
    force_answer: bool,
    retry_failed: bool,
    report_only: bool,
    no_progress: bool,
    config_path: Path | None,
    **opts: Any,
) -> None:
    """Evaluate methods on datasets; resumable, writes OUT/report.md and plots.

    Settings for every method come from the config file, the environment, the setting flags and
    ``--set``, in that order; they override the paper's per-dataset settings, and a method
    spec's own settings (``flare:theta=0.4``) override them all.
    """
    specs = expand(methods, ablations, sweeps)
    overrides = {**configured_values(config_path), **flag_values(opts), **_set_values(sets)}
    Settings(**overrides)  # fail on a bad setting before loading anything
    if not report_only:
        # Every dataset's slice is checked before an index is built or anything written.
        selected = [(ds, ds.select(limit=limit, offset=offset, seed=seed, split=split))
                    for ds in map(load_dataset, datasets)]  # fmt: skip
        jobs = []
        for ds, examples in selected:
            retriever = ds.retriever(index_cache, progress=not no_progress)
            task = task_of(ds.name, ds.examples)
            metadata = ds.metadata() if task == "facts" else None
            jobs.append(Job(ds.name, task, examples, retriever, truth_scores(ds.folder), metadata))
        from flare.lm.registry import resolve_model

        backend = {} if shift_cache is None else {"shift_cache": shift_cache}
        lm = resolve_model(overrides.get("model"), n_threads=threads, special_tokens=special_tokens, **backend)
        out_dir.mkdir(parents=True, exist_ok=True)  # the results folder is made once the run can start
        with (out_dir / "commands.txt").open("a", encoding="utf-8") as fh:
            fh.write(_command_line(click.get_current_context()) + "\n")
        try:
            ran = run_eval(jobs, specs, lm, out_dir, overrides=overrides, retry_failed=retry_failed,
                           progress=not no_progress, force=force_answer)
            click.echo(f"ran {ran} answers", err=True)
        finally:  # Ctrl-C too: the report covers every answer finished so far
            _report(out_dir)
    else:
        _report(out_dir)


def _report(out_dir: Path) -> None:
    records = read_results(out_dir / RESULTS_FILE)
    if not records:
        click.echo(f"no results in {out_dir / RESULTS_FILE} yet", err=True)
        return
    for path in write_report(records, out_dir):
        click.echo(f"wrote {path}", err=True)


def _command_line(ctx: click.Context) -> str:
    """The command as parsed (options that differ from their defaults), for the report's record."""
    parts = ["flare", "eval"]
    for p in ctx.command.params:
        if not isinstance(p, click.Option) or p.name is None:
            continue
        value = ctx.params[p.name]
        if p.is_flag and p.secondary_opts:
            if value != p.default:
                parts.append(p.opts[0] if value else p.secondary_opts[0])
        elif p.is_flag:
            if value:
                parts.append(p.opts[0])
        elif p.multiple:
            for v in value:
                parts += [p.opts[0], str(v)]
        elif value is not None and value != p.default:
            parts += [p.opts[0], str(value)]
    return shlex.join(parts)


def _set_values(sets: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in sets:
        key, eq, value = item.partition("=")
        if not eq:
            raise ConfigError(f"bad --set {item!r}", "write KEY=VALUE, e.g. --set max_output_tokens=128")
        try:
            out[key.strip()] = setting_info(key.strip()).parse(value)
        except ConfigError as err:
            raise ConfigError(f"--set {item}: {err.message}", err.hint) from None
    return out


if __name__ == "__main__":  # `python -m flare.cli.eval_cmd ...` before the command is registered
    eval_command()
