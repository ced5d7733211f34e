"""Seconds against gain, every held-out round: where issue 16's 1.5× line sits among the wins.

For every held-out results file (``test*/*/results.jsonl``) and every method with the evidence
trigger (``flare:trigger=support…``, the shipped default's family), paired with ``single`` on
the questions both answered: the mean difference of the main score (as ``analyse.py``: fact
recall from the truth on the long-form world, else the dataset's quality), its 95% bootstrap
interval, and the ratio of mean seconds per answer. Lanes of one round on one dataset family
(a set split in halves) are pooled. Prints a table and, with ``--plot PNG``, draws each round's
sets as points: x the seconds ratio, y the gain with its interval, the 1.5× line dashed.

Usage::

    python docs/results/qwen/frontier.py --plot docs/results/qwen/frontier.png > docs/results/qwen/frontier.md
"""

from __future__ import annotations

import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from analyse import REFERENCE, interval, main_score

from flare.evaluate.harness import read_results

HERE = Path(__file__).resolve().parent
FAMILIES = (  # dataset name -> family, first match wins
    ("bridge", "world bridge"), ("world", "world long form"), ("2wiki", "2WikiMultihopQA"),
    ("hotpot", "HotpotQA"), ("musique", "MuSiQue"), ("asqa", "ASQA"), ("qinglan", "Chinese"),
)  # fmt: skip
Point = tuple[int, str, str, float, float, float, float, int]  # round, family, method, Δ, lo, hi, ratio, n


def family(dataset: str) -> str:
    return next((name for key, name in FAMILIES if key in dataset), dataset)


def points() -> list[Point]:
    """One point per round, family and evidence-trigger method, lanes pooled."""
    # (round, family, method) -> question id -> (score, seconds) for the method and for single
    runs: dict[tuple[int, str, str], dict[str, tuple[float, float]]] = defaultdict(dict)
    base: dict[tuple[int, str], dict[str, tuple[float, float]]] = defaultdict(dict)
    for path in sorted(HERE.glob("test*/*/results.jsonl")):
        found = re.fullmatch(r"test(\d*)", path.parent.parent.name)
        assert found is not None
        rnd = int(found.group(1) or 1)
        for r in read_results(path):
            score = None if r.get("error") or not r.get("scores") else main_score(r)
            if score is None:
                continue
            fam = family(str(r["dataset"]))
            key = f"{r['dataset']}:{r['id']}"
            if r["method"] == REFERENCE:
                base[(rnd, fam)][key] = (score, float(r["seconds"]))
            elif str(r["method"]).startswith("flare:trigger=support"):
                runs[(rnd, fam, str(r["method"]))][key] = (score, float(r["seconds"]))
    out: list[Point] = []
    for (rnd, fam, method), answers in sorted(runs.items()):
        ref = base[(rnd, fam)]
        ids = sorted(set(answers) & set(ref))
        if len(ids) < 20:
            continue
        diffs = [answers[i][0] - ref[i][0] for i in ids]
        lo, hi = interval(diffs)
        ratio = sum(answers[i][1] for i in ids) / sum(ref[i][1] for i in ids)
        out.append((rnd, fam, method, statistics.mean(diffs), lo, hi, ratio, len(ids)))
    return out


def table(pts: list[Point]) -> None:
    print("| round | set | n | Δ vs single [95%] | seconds vs single | method |")
    print("|---:|---|---:|---|---:|---|")
    for rnd, fam, method, mean, lo, hi, ratio, n in pts:
        short = method.removeprefix("flare:trigger=support")
        print(f"| {rnd} | {fam} | {n} | {mean:+.3f} [{lo:+.3f}, {hi:+.3f}] | {ratio:.2f}× | `…{short}` |")


def plot(pts: list[Point], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5))
    for i, name in enumerate(dict.fromkeys(name for _, name in FAMILIES)):
        mine = [p for p in pts if p[1] == name]
        if not mine:
            continue
        xs, ys = [p[6] for p in mine], [p[3] for p in mine]
        err = [[p[3] - p[4] for p in mine], [p[5] - p[3] for p in mine]]
        ax.errorbar(xs, ys, yerr=err, fmt="o", color=f"C{i}", capsize=2, alpha=0.8, label=name)
        for p in mine:
            ax.annotate(str(p[0]), (p[6], p[3]), fontsize=6, xytext=(3, 2), textcoords="offset points")
    ax.axvline(1.5, color="k", ls="--", lw=0.8)
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xlabel("seconds per answer, ratio to single's (paired questions)")
    ax.set_ylabel("score − single's (95% bootstrap interval)")
    ax.set_title("Evidence-trigger FLARE against single-time retrieval, every held-out round (label: round)",
                 fontsize=9)  # fmt: skip
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    tmp = out.with_name(f".{out.name}.tmp.png")
    fig.savefig(tmp, dpi=120)
    tmp.replace(out)


def main(argv: list[str]) -> None:
    pts = points()
    table(pts)
    if "--plot" in argv:
        plot(pts, Path(argv[argv.index("--plot") + 1]))


if __name__ == "__main__":
    main(sys.argv[1:])
