"""Tables for the Qwen runs (issue 16): every method paired with ``single`` on the same questions.

For each results file and dataset: per method the number of questions, the main score (world:
fact recall from the ground truth; QA sets: the dataset's quality score), the shares of sentences
shown unmarked but unsupported and flagged `[?]` (the checker's), and on the world the truth's
unsupported, cited-but-unsupported and unmarked-but-unsupported shares (the last: claim sentences
shown without the mark that the world's truth finds unbacked by what they cite, judged here from
the trace), retrievals and LM calls per answer, tokens evaluated
per answer (the trace's ``lm_tokens_evaluated``: prompt tokens the model evaluated plus those it
generated, its work whatever the machine's load), median seconds; then the paired difference to
``single`` over the questions both answered — mean, 95% bootstrap interval (10,000 resamples,
seed 0), wins / losses — and the ratio of mean seconds per answer.

Usage::

    python docs/results/qwen/analyse.py docs/results/qwen/test/*/results.jsonl > docs/results/qwen/tables.md
    python docs/results/qwen/analyse.py --plot docs/results/qwen/test2.png docs/results/qwen/test2/*/results.jsonl

An argument ``a/results.jsonl+b/results.jsonl`` pools the questions of both files in one table
(one lane's questions split in two). ``--plot PNG`` also draws every paired difference with its
interval, one row per lane and method. ``--steps`` also splits each method's tokens evaluated
per answer by the kind and decision of the trace's steps (where the extra tokens go).
"""

from __future__ import annotations

import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

from flare.evaluate.harness import read_results
from flare.evaluate.world import load_world
from flare.evaluate.world.score import judge_record
from flare.evaluate.world.truth import Judge

REFERENCE = "single"
WORLDS = Path(__file__).resolve().parents[1] / "world" / "data"
_judges: dict[str, Judge | None] = {}


def unmarked_unsupported(record: dict[str, Any]) -> float | None:
    """Share of an answer's claim sentences shown unmarked that the world's truth finds unbacked by
    the passages they cite (None: not a world, or no claim sentence)."""
    dataset = str(record["dataset"])
    if dataset not in _judges:
        folder = WORLDS / dataset
        _judges[dataset] = Judge(load_world(folder)) if (folder / "truth.jsonl").exists() else None
    judge = _judges[dataset]
    verdict = None if judge is None else judge_record(judge, record)
    if verdict is None:
        return None
    marks = [str(s.get("verify") or "").endswith("flag") for s in record["trace"]["steps"] if s.get("sentence")]
    shown = [v for v, flagged in zip(verdict.sentences, marks, strict=True) if v.status != "no_claims" and not flagged]
    return sum(not v.supported for v in shown) / len(shown) if shown else 0.0


def main_score(record: dict[str, Any]) -> float | None:
    """The long-form world: fact recall from the truth; else the dataset's quality — exact match on
    the world's short bridge questions, as on 2WikiMultihopQA (None: nothing to score, e.g. a
    permission probe with no gold facts)."""
    scores = record["scores"]
    long_world = record.get("task") == "long" and "truth_fact_recall" in scores
    value = scores["truth_fact_recall"] if long_world else scores["quality"]
    return None if value is None else float(value)


def _score(record: dict[str, Any]) -> float:
    value = main_score(record)
    assert value is not None  # unscored records are left out when the results are read
    return value


def interval(diffs: list[float], resamples: int = 10_000) -> tuple[float, float]:
    rng = random.Random(0)
    n = len(diffs)
    means = sorted(sum(rng.choice(diffs) for _ in range(n)) / n for _ in range(resamples))
    return means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def mean_of(values: list[float]) -> str:
    return f"{statistics.mean(values):.3f}" if values else "–"


def share(records: list[dict[str, Any]], key: str) -> str:
    return mean_of([r["scores"][key] for r in records if r["scores"].get(key) is not None])


def unmarked(records: list[dict[str, Any]]) -> str:
    return mean_of([x for r in records for x in [unmarked_unsupported(r)] if x is not None])


Paired = tuple[str, float, float, float, int]  # label, mean difference, low, high, n


class Comparison(NamedTuple):
    """A method against ``single`` over the questions both answered."""

    n: int
    mean: float
    low: float
    high: float
    wins: int
    losses: int
    ratio: float  # mean seconds per answer over single's


def compare(ours: dict[str, dict[str, Any]], ref: dict[str, dict[str, Any]]) -> Comparison:
    """Paired score difference (95% bootstrap interval), wins, losses and seconds ratio; records by id."""
    ids = sorted(set(ours) & set(ref))
    diffs = [_score(ours[i]) - _score(ref[i]) for i in ids]
    lo, hi = interval(diffs)
    slow = sum(ours[i]["seconds"] for i in ids) / max(1e-9, sum(ref[i]["seconds"] for i in ids))
    return Comparison(len(ids), statistics.mean(diffs), lo, hi, sum(d > 0 for d in diffs),
                      sum(d < 0 for d in diffs), slow)  # fmt: skip


def table(paths: list[Path], pairs: list[Paired] | None = None) -> None:
    """One table per dataset of ``paths`` read together (several: one lane's questions pooled)."""
    by: dict[str, dict[str, dict[str, dict[str, Any]]]] = defaultdict(lambda: defaultdict(dict))
    for path in paths:
        for r in read_results(path):
            if not r.get("error") and r.get("scores") and main_score(r) is not None:
                by[r["dataset"]][r["method"]][r["id"]] = r
    name = " + ".join(path.parent.name for path in paths)
    for dataset, methods in sorted(by.items()):
        base = methods.get(REFERENCE, {})
        print(f"\n### {dataset} — `{name}`\n")
        print("| method | n | score | shown unsupported | flagged | truth: unsupported | truth: cited unsupported "
              "| truth: unmarked unsupported | retrievals | LM calls | tokens evaluated | p50 s | Δ vs single [95%] "
              "| wins / losses | seconds vs single |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
        for method, recs in sorted(methods.items(), key=lambda kv: (kv[0] != REFERENCE, kv[0])):
            rows = list(recs.values())
            cells = [
                f"`{method}`", str(len(rows)), f"{statistics.mean(_score(r) for r in rows):.3f}",
                share(rows, "shown_unsupported"), share(rows, "flagged"), share(rows, "truth_unsupported_share"),
                share(rows, "truth_cited_unsupported"), unmarked(rows),
                f"{statistics.mean(r['retrievals'] for r in rows):.2f}",
                f"{statistics.mean(r['lm_calls'] for r in rows):.2f}",
                f"{statistics.mean(r['trace']['lm_tokens_evaluated'] for r in rows):.0f}",
                f"{statistics.median(r['seconds'] for r in rows):.1f}",
            ]  # fmt: skip
            if method != REFERENCE and len(set(recs) & set(base)) >= 2:
                c = compare(recs, base)
                if pairs is not None:
                    pairs.append((f"{name}: {method}", c.mean, c.low, c.high, c.n))
                cells += [f"{c.mean:+.3f} [{c.low:+.3f}, {c.high:+.3f}] (n={c.n})",
                          f"{c.wins} / {c.losses}", f"{c.ratio:.2f}×"]  # fmt: skip
            else:
                cells += ["", "", ""]
            print("| " + " | ".join(cells) + " |")


def plot(pairs: list[Paired], out: Path) -> None:
    """A forest plot: each method's difference to ``single`` with its 95% interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = 5 + 0.07 * max(len(p[0]) for p in pairs)  # room for the labels on the left
    fig, ax = plt.subplots(figsize=(width, 0.5 * len(pairs) + 1.2))
    for y, (_, mean, lo, hi, n) in enumerate(reversed(pairs)):
        ax.errorbar(mean, y, xerr=[[mean - lo], [hi - mean]], fmt="o", color="C0" if lo > 0 else "C7", capsize=3)
        ax.text(1.02, y, f"n={n}", transform=ax.get_yaxis_transform(), va="center", fontsize=8)
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(range(len(pairs)), [p[0] for p in reversed(pairs)], fontsize=8)
    ax.set_xlabel("score − single's, paired (95% bootstrap interval)")
    fig.tight_layout()
    tmp = out.with_name(f".{out.name}.tmp.png")
    fig.savefig(tmp, dpi=120)
    tmp.replace(out)


def steps_table(paths: list[Path]) -> None:
    """Per method: steps per answer, tokens evaluated per step and per answer, by step kind and decision."""
    print(f"\n### tokens by step — `{' + '.join(p.parent.name for p in paths)}`\n")
    print("| method | step (kind, decision) | steps per answer | tokens per step | tokens per answer |")
    print("|---|---|---:|---:|---:|")
    by_method: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for path in paths:
        for r in read_results(path):
            if r.get("trace"):
                by_method[str(r["method"])].append(r)
    for method, records in sorted(by_method.items()):
        count: dict[str, int] = defaultdict(int)
        tokens: dict[str, int] = defaultdict(int)
        for r in records:
            for step in r["trace"]["steps"]:
                key = f"{step['kind']}, {str(step['decision']).split(':')[0]}"
                count[key] += 1
                tokens[key] += step.get("lm_tokens_evaluated") or 0
        n = len(records)
        for key in sorted(count):
            per_step, per_answer = tokens[key] / count[key], tokens[key] / n
            print(f"| `{method}` | {key} | {count[key] / n:.2f} | {per_step:.0f} | {per_answer:.0f} |")


if __name__ == "__main__":
    args = sys.argv[1:]
    target = Path(args.pop(args.index("--plot") + 1)) if "--plot" in args else None
    by_step = "--steps" in args
    args = [a for a in args if a not in ("--plot", "--steps")]
    found: list[Paired] = []
    for arg in args:  # a+b: the two files' questions in one table
        table([Path(part) for part in arg.split("+")], found)
        if by_step:
            steps_table([Path(part) for part in arg.split("+")])
    if target is not None and found:
        plot(found, target)
