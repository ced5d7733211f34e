"""Score ``flare eval`` results on the fictional world with its ground truth, per method.

Each results record carries its question id and trace; the trace gives every committed
sentence with the passages it cites, which :class:`~flare.evaluate.world.truth.Judge` checks
against what the world knows. A failed example (no trace) counts 0 for fact recall and is left
out of the shares, which have no sentences to count; the table says how many failed.

Usage::

    python -m flare.evaluate.world.score docs/results/world/data/world runs/world/results.jsonl

or from Python::

    j = Judge(load_world(folder))
    verdict = judge_record(j, record)     # AnswerVerdict, or None for a failed example
    verdict.scores()                      # {"fact_recall": ..., "cited_unsupported": ..., ...}
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from flare.errors import FlareError, InputError
from flare.evaluate.harness import read_results
from flare.evaluate.world import load_world
from flare.evaluate.world.truth import AnswerVerdict, Judge, sentences_from_trace

FIGURES = ("fact_recall", "supported_fact_recall", "fact_precision", "unsupported_share", "cited_unsupported",
           "citation_recall", "citation_precision")


def judge_record(j: Judge, record: Mapping[str, Any]) -> AnswerVerdict | None:
    """The verdict on one ``results.jsonl`` record; None when the example failed (no trace)."""
    trace = record.get("trace")
    if record.get("error") or not trace:
        return None
    return j.judge(str(record["id"]), sentences_from_trace(trace))


def truth_scores(folder: Path) -> Callable[[dict[str, Any]], dict[str, float | None]] | None:
    """For ``flare eval``: the world's ground-truth figures of a record, prefixed ``truth_``.

    None when ``folder`` holds no world (no ``truth.jsonl``). A failed example stated nothing:
    its fact recall is 0 and its shares are left out (None).
    """
    if not (folder / "truth.jsonl").exists():
        return None
    j = Judge(load_world(folder))

    def scores(record: dict[str, Any]) -> dict[str, float | None]:
        verdict = judge_record(j, record)
        if verdict is None:
            return {f"truth_{name}": (0.0 if name == "fact_recall" else None) for name in FIGURES}
        return {f"truth_{name}": value for name, value in verdict.scores().items() if name in FIGURES}

    return scores


def summarize(j: Judge, records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Per method: answers, failures, and the mean of each figure over the answers that have it."""
    per: dict[str, list[AnswerVerdict | None]] = {}
    for rec in records:
        per.setdefault(str(rec["method"]), []).append(judge_record(j, rec))
    out: dict[str, dict[str, float]] = {}
    for method, verdicts in per.items():
        row: dict[str, float] = {"answers": len(verdicts), "failed": sum(v is None for v in verdicts)}
        for name in FIGURES:
            if name == "fact_recall":  # a failed answer stated nothing
                values = [v.fact_recall if v else 0.0 for v in verdicts]
            else:
                values = [x for v in verdicts if v for x in [v.scores()[name]] if x is not None]
            row[name] = sum(values) / len(values) if values else math.nan
        out[method] = row
    return out


def table(summary: Mapping[str, Mapping[str, float]]) -> str:
    """A markdown table of :func:`summarize`'s figures."""
    head = ["method", "answers", "failed", *FIGURES]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for method, row in summary.items():
        cells = [method, f"{row['answers']:.0f}", f"{row['failed']:.0f}", *(f"{row[f]:.3f}" for f in FIGURES)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m flare.evaluate.world.score WORLD_DIR RESULTS.jsonl [...]", file=sys.stderr)
        return 2
    world_dir = Path(argv[0])
    try:
        j = Judge(load_world(world_dir))
        records = [r for path in argv[1:] for r in read_results(Path(path)) if r["dataset"] == world_dir.name]
        if not records:
            raise InputError(f"no records of dataset {world_dir.name!r} in {', '.join(argv[1:])}",
                             "give the results.jsonl of a flare eval run on this world folder")
        print(table(summarize(j, records)))
    except (FlareError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
