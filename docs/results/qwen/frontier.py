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
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

from analyse import REFERENCE, Comparison, compare, main_score

from flare.evaluate.harness import read_results

HERE = Path(__file__).resolve().parent
FAMILIES = (  # dataset name -> family, first match wins
    ("bridge", "world bridge"), ("world", "world long form"), ("2wiki", "2WikiMultihopQA"),
    ("hotpot", "HotpotQA"), ("musique", "MuSiQue"), ("asqa", "ASQA"), ("qinglan", "Chinese"),
)  # fmt: skip


class Point(NamedTuple):
    """One round's evidence-trigger method on one dataset family, against ``single``."""

    round: int
    family: str
    method: str
    versus: Comparison


def family(dataset: str) -> str:
    return next((name for key, name in FAMILIES if key in dataset), dataset)


def points() -> list[Point]:
    """One point per round, family and evidence-trigger method, lanes pooled."""
    Records = dict[str, dict[str, Any]]  # "dataset:id" -> record
    runs: dict[tuple[int, str, str], Records] = defaultdict(dict)
    base: dict[tuple[int, str], Records] = defaultdict(dict)
    for path in sorted(HERE.glob("test*/*/results.jsonl")):
        found = re.fullmatch(r"test(\d*)", path.parent.parent.name)
        assert found is not None
        rnd = int(found.group(1) or 1)
        for r in read_results(path):
            if r.get("error") or not r.get("scores") or main_score(r) is None:
                continue
            fam = family(str(r["dataset"]))
            key = f"{r['dataset']}:{r['id']}"
            if r["method"] == REFERENCE:
                base[(rnd, fam)][key] = r
            elif str(r["method"]).startswith("flare:trigger=support"):
                runs[(rnd, fam, str(r["method"]))][key] = r
    return [Point(rnd, fam, method, compare(answers, base[(rnd, fam)]))
            for (rnd, fam, method), answers in sorted(runs.items())
            if len(set(answers) & set(base[(rnd, fam)])) >= 20]  # fmt: skip


def table(pts: list[Point]) -> None:
    print("| round | set | n | Δ vs single [95%] | seconds vs single | method |")
    print("|---:|---|---:|---|---:|---|")
    for p in pts:
        c, short = p.versus, p.method.removeprefix("flare:trigger=support")
        print(f"| {p.round} | {p.family} | {c.n} | {c.mean:+.3f} [{c.low:+.3f}, {c.high:+.3f}] | {c.ratio:.2f}× "
              f"| `…{short}` |")  # fmt: skip


def plot(pts: list[Point], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5))
    for i, name in enumerate(dict.fromkeys(name for _, name in FAMILIES)):
        mine = [(p.round, p.versus) for p in pts if p.family == name]
        if not mine:
            continue
        xs, ys = [c.ratio for _, c in mine], [c.mean for _, c in mine]
        err = [[c.mean - c.low for _, c in mine], [c.high - c.mean for _, c in mine]]
        ax.errorbar(xs, ys, yerr=err, fmt="o", color=f"C{i}", capsize=2, alpha=0.8, label=name)
        for rnd, c in mine:
            ax.annotate(str(rnd), (c.ratio, c.mean), fontsize=6, xytext=(3, 2), textcoords="offset points")
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
