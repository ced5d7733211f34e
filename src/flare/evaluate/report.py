"""Turn ``results.jsonl`` into a Markdown table and PNG plots (E3, E4).

One row per (dataset, method): quality next to what it cost — retrieval rate (share of sentences
whose step searched), retrievals and LM calls per answer, latency p50/p95 — plus gold-passage
recall and how many examples failed. Failed examples are in every mean as wrong answers.

Plots (matplotlib, Agg backend, written only when the results hold the data for them):
``quality_vs_retrieval.png`` (every method), ``theta_sweep.png`` and ``beta_sweep.png`` (FLARE
direct runs that differ only in θ or β), ``position.png`` (per sentence position: share retrieved
and share stating a gold answer).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flare.evaluate.metrics import mean, percentile

QUALITY_NAMES = {"short": "EM", "yesno": "accuracy", "long": "STR-EM"}
EXTRA_SCORES = {"short": ("f1", "precision", "recall", "answer_cue"), "yesno": ("answer_cue",), "long": ("rouge_l",)}


def summarise(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One summary row per (dataset, method), in order of first appearance."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[(r["dataset"], r["method"])].append(r)
    rows = []
    for (dataset, method), rs in groups.items():
        task = rs[0]["task"]
        sentences = sum(r["sentences"] for r in rs)
        row: dict[str, Any] = {
            "dataset": dataset, "method": method, "task": task, "n": len(rs),
            "failed": sum(1 for r in rs if r.get("error")),
            "quality": mean(r["scores"]["quality"] for r in rs),
            "retrieval_rate": sum(r["retrieved_sentences"] for r in rs) / sentences if sentences else math.nan,
            "retrievals": mean(r["retrievals"] for r in rs),
            "lm_calls": mean(r["lm_calls"] for r in rs),
            "sentences": mean(r["sentences"] for r in rs),
            "p50": percentile([r["seconds"] for r in rs], 50),
            "p95": percentile([r["seconds"] for r in rs], 95),
            "gold_recall": mean(r.get("gold_recall") for r in rs),
            "theta": _common(rs, "theta"), "beta": _common(rs, "beta"),
            "policy": rs[0]["settings"]["method"], "query": _common(rs, "query"),
            "trigger": _common(rs, "trigger"),
        }
        for key in EXTRA_SCORES[task]:
            row[key] = mean(r["scores"].get(key) for r in rs)
        rows.append(row)
    return rows


def _common(rs: Sequence[dict[str, Any]], key: str) -> Any:
    return Counter(str(r["settings"][key]) for r in rs).most_common(1)[0][0]


def markdown(rows: Sequence[dict[str, Any]], *, title: str = "flare eval") -> str:
    """The report table, one section per dataset."""
    out = [f"# {title}", ""]
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        rs = [r for r in rows if r["dataset"] == dataset]
        task = rs[0]["task"]
        extra = EXTRA_SCORES[task]
        head = ["method", "n", "failed", QUALITY_NAMES[task], *extra, "gold recall", "retrieval rate",
                "retrievals/answer", "LM calls/answer", "sentences/answer", "p50 s", "p95 s"]
        out += [f"## {dataset}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in rs:
            cells = [r["method"], str(r["n"]), str(r["failed"]), _f(r["quality"]), *(_f(r[k]) for k in extra),
                     _f(r["gold_recall"]), _f(r["retrieval_rate"]), _f(r["retrievals"], 2), _f(r["lm_calls"], 2),
                     _f(r["sentences"], 2), _f(r["p50"], 1), _f(r["p95"], 1)]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def _f(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.{digits}f}"


def write_report(records: Sequence[dict[str, Any]], out_dir: Path, *, title: str = "flare eval") -> list[Path]:
    """Write ``report.md`` and every plot the data allows; returns the files written."""
    rows = summarise(records)
    md = out_dir / "report.md"
    md.write_text(markdown(rows, title=title) + "\n", encoding="utf-8")
    return [md, *plots(rows, records, out_dir)]


def plots(rows: Sequence[dict[str, Any]], records: Sequence[dict[str, Any]], out_dir: Path) -> list[Path]:
    """The PNG plots; a plot is skipped when the results hold nothing to draw on it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    if rows:
        fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 4), squeeze=False)
        for ax, ds in zip(axes[0], datasets, strict=True):
            for r in (r for r in rows if r["dataset"] == ds):
                x = 0.0 if math.isnan(r["retrieval_rate"]) else r["retrieval_rate"]
                ax.scatter(x, r["quality"])
                ax.annotate(r["method"], (x, r["quality"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
            ax.set(title=ds, xlabel="retrieval rate (share of sentences)", ylabel="quality", xlim=(-0.05, 1.1))
        written.append(_save(fig, out_dir / "quality_vs_retrieval.png"))
    for knob, other in (("theta", "beta"), ("beta", "theta")):
        fig = _sweep(plt, rows, datasets, knob, other)
        if fig is not None:
            written.append(_save(fig, out_dir / f"{knob}_sweep.png"))
    fig = _positions(plt, records)
    if fig is not None:
        written.append(_save(fig, out_dir / "position.png"))
    return written


def _sweep(plt: Any, rows: Sequence[dict[str, Any]], datasets: list[str], knob: str, other: str) -> Any:
    """Quality and retrieval rate against ``knob`` for implicit FLARE runs that share ``other``."""
    fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 4), squeeze=False)
    drawn = False
    for ax, ds in zip(axes[0], datasets, strict=True):
        rs = [r for r in rows if r["dataset"] == ds and r["policy"] == "flare" and r["query"] == "implicit"]
        if not rs:
            continue
        # One line holds everything but the knob fixed: the other threshold and the trigger rule.
        fixed, trigger = Counter((r[other], r.get("trigger")) for r in rs).most_common(1)[0][0]
        pts = sorted(
            (float(r[knob]), r["quality"], r["retrieval_rate"])
            for r in rs
            if r[other] == fixed and r.get("trigger") == trigger
        )
        if len({p[0] for p in pts}) < 2:
            continue
        drawn = True
        xs = [p[0] for p in pts]
        ax.plot(xs, [p[1] for p in pts], "o-", label="quality")
        ax.plot(xs, [p[2] for p in pts], "s--", label="share of sentences retrieved")
        ax.set(title=f"{ds} ({other}={fixed}, trigger={trigger})", xlabel=knob, ylim=(-0.05, 1.05))
        ax.legend(fontsize=7)
    if not drawn:
        plt.close(fig)
        return None
    return fig


def _positions(plt: Any, records: Sequence[dict[str, Any]]) -> Any:
    """Per sentence position and method: share of sentences retrieved and share stating a gold answer."""
    by: dict[str, dict[int, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        for i, p in enumerate(r.get("positions") or []):
            by[f"{r['dataset']} {r['method']}"][i].append(p)
    if not by:
        return None
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    for name, pos in sorted(by.items()):
        xs = sorted(pos)
        a1.plot(xs, [mean(float(p["retrieved"]) for p in pos[i]) for i in xs], "o-", label=name)
        gold = [mean(None if p["has_gold"] is None else float(p["has_gold"]) for p in pos[i]) for i in xs]
        a2.plot(xs, gold, "o-", label=name)
    a1.set(title="retrieved, by sentence position", xlabel="sentence index", ylim=(-0.05, 1.05))
    a2.set(title="states a gold answer, by sentence position", xlabel="sentence index", ylim=(-0.05, 1.05))
    a2.legend(fontsize=6)
    return fig


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
