"""θ sweep with one line per trigger (``flare eval``'s theta_sweep.png mixes triggers at the same θ).

Usage: ``python docs/results/theta_by_trigger.py docs/results/gemma3-dev`` → OUT/theta_by_trigger.png
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from flare.evaluate.harness import read_results
from flare.evaluate.report import summarise


def main(out: str) -> None:
    rows = [r for r in summarise(read_results(Path(out) / "results.jsonl")) if r["policy"] == "flare"]
    recs = read_results(Path(out) / "results.jsonl")
    trig = {(r["dataset"], r["method"]): r["settings"]["trigger"] for r in recs}
    fig, ax = plt.subplots(figsize=(6, 4))
    for t, style in (("min", "o"), ("content", "s")):
        pts = sorted((float(r["theta"]), r["quality"], r["retrieval_rate"]) for r in rows
                     if trig[(r["dataset"], r["method"])] == t)
        if pts:
            xs = [p[0] for p in pts]
            ax.plot(xs, [p[1] for p in pts], style + "-", label=f"EM, trigger={t}")
            ax.plot(xs, [p[2] for p in pts], style + "--", label=f"retrieval rate, trigger={t}")
    ax.axhspan(0.4, 0.8, color="grey", alpha=0.1, label="40-80% band")
    ax.set(xlabel="theta", ylim=(-0.05, 1.05), title=f"{Path(out).name}: FLARE by trigger")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(Path(out) / "theta_by_trigger.png", dpi=110)


if __name__ == "__main__":
    main(sys.argv[1])
