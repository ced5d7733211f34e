"""Turn ``results.jsonl`` into a Markdown table and PNG plots (E3, E4).

One row per (dataset, method): quality next to what it cost — retrieval rate (share of sentences
whose step searched, and the same share after the first sentence, which every retrieving method
writes from a search with the question), retrievals and LM calls per answer, latency p50/p95 — plus gold-passage
recall and how many examples failed. Failed examples are in every mean as wrong answers. A second
table per dataset pairs every method with a reference method (``single`` when present) on the
questions both answered: wins, losses, the difference in quality with a 95% paired-bootstrap
interval, and a two-sided sign-test p-value — so a reader can see whether a gap is more than noise.

Plots (matplotlib, Agg backend, written only when the results hold the data for them):
``quality_vs_retrieval.png`` (every method), ``theta_sweep.png`` and ``beta_sweep.png`` (FLARE
direct runs that differ only in θ or β), ``position.png`` (per sentence position: share retrieved
and share stating a gold answer).
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flare.evaluate.citations import FIGURES as CITATION_FIGURES
from flare.evaluate.metrics import mean, percentile

QUALITY_NAMES = {"short": "EM", "yesno": "accuracy", "long": "STR-EM", "facts": "fact recall"}
EXTRA_SCORES = {"short": ("f1", "precision", "recall", "answer_cue"), "yesno": ("answer_cue",), "long": ("rouge_l",),
                "facts": ("all_facts", "stale", "secret", "leak")}


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
            "later_rate": later_rate(rs),
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
        row["support"] = {key: mean(r["scores"].get(key) for r in rs) for key in support_keys(rs)}
        rows.append(row)
    return rows


def support_keys(rs: Sequence[dict[str, Any]]) -> list[str]:
    """The citation figures, then the ground-truth ones (``truth_…``) that these records have."""
    truth = sorted({k for r in rs for k in r["scores"] if k.startswith("truth_")})
    return [*CITATION_FIGURES, *truth]


def later_rate(rs: Sequence[dict[str, Any]]) -> float:
    """Share of sentences after the first that retrieved (the first always searches with the question)."""
    later = [p["retrieved"] for r in rs for p in (r.get("positions") or [])[1:]]
    return sum(later) / len(later) if later else math.nan


def _common(rs: Sequence[dict[str, Any]], key: str) -> Any:
    return Counter(str(r["settings"][key]) for r in rs).most_common(1)[0][0]


def markdown(rows: Sequence[dict[str, Any]], *, title: str = "flare eval",
             records: Sequence[dict[str, Any]] = ()) -> str:
    """The report table, one section per dataset (with the paired table when ``records`` are given)."""
    out = [f"# {title}", ""]
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        rs = [r for r in rows if r["dataset"] == dataset]
        task = rs[0]["task"]
        extra = EXTRA_SCORES[task]
        head = ["method", "n", "failed", QUALITY_NAMES[task], *extra, "gold recall", "retrieval rate",
                "rate after 1st sentence", "retrievals/answer", "LM calls/answer", "sentences/answer", "p50 s", "p95 s"]
        out += [f"## {dataset}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in rs:
            cells = [r["method"], str(r["n"]), str(r["failed"]), _f(r["quality"]), *(_f(r[k]) for k in extra),
                     _f(r["gold_recall"]), _f(r["retrieval_rate"]), _f(r["later_rate"]), _f(r["retrievals"], 2),
                     _f(r["lm_calls"], 2),
                     _f(r["sentences"], 2), _f(r["p50"], 1), _f(r["p95"], 1)]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
        out += support_markdown(rs)
        out += paired_markdown(records, dataset)
    return "\n".join(out)


def support_markdown(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Citation and support figures per method (see :mod:`flare.evaluate.citations`)."""
    keys = [k for k in rows[0]["support"] if any(not math.isnan(r["support"].get(k, math.nan)) for r in rows)]
    if not keys:
        return []
    head = ["method", *(k.replace("truth_", "truth: ").replace("_", " ") for k in keys)]
    out = ["Citations and support (checker-based; `truth:` columns are exact, from the world's ground truth):", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        out.append("| " + " | ".join([r["method"], *(_f(r["support"].get(k)) for k in keys)]) + " |")
    return [*out, ""]


REFERENCE = "single"
BOOTSTRAP = 2000


@dataclass(frozen=True, slots=True)
class Paired:
    """One method against the reference on the questions both answered."""

    method: str
    n: int
    wins: int
    losses: int
    delta: float  # mean quality difference, method − reference
    low: float  # 95% paired-bootstrap interval of delta
    high: float
    p_sign: float  # two-sided sign test on wins vs losses


def paired(
    records: Sequence[dict[str, Any]], dataset: str, reference: str = REFERENCE, *, metric: str = "quality"
) -> list[Paired]:
    """Every method of ``dataset`` against ``reference`` per question (empty without the reference).

    ``metric`` is any score of the records; questions where either side has none are left out.
    """
    by: dict[str, dict[str, float]] = defaultdict(dict)
    for r in records:
        value = r["scores"].get(metric)
        if r["dataset"] == dataset and value is not None:
            by[r["method"]][r["id"]] = float(value)
    base = by.get(reference)
    if not base:
        return []
    out = []
    for method, scores in by.items():
        if method == reference:
            continue
        ids = sorted(set(scores) & set(base))
        if not ids:
            continue
        diffs = [scores[i] - base[i] for i in ids]
        low, high = bootstrap_interval(diffs)
        wins, losses = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
        out.append(Paired(method, len(ids), wins, losses, sum(diffs) / len(diffs), low, high,
                          sign_test(wins, losses)))
    return out


def bootstrap_interval(diffs: Sequence[float], *, resamples: int = BOOTSTRAP, seed: int = 0) -> tuple[float, float]:
    """95% percentile interval of the mean of ``diffs`` over seeded resamples of the questions."""
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return means[int(0.025 * (resamples - 1))], means[math.ceil(0.975 * (resamples - 1))]


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact binomial p-value of ``wins`` against ``losses`` (ties dropped)."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail: float = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_markdown(records: Sequence[dict[str, Any]], dataset: str) -> list[str]:
    """The paired table of one dataset (no lines when the reference method was not run)."""
    pairs = paired(records, dataset)
    if not pairs:
        return []
    out = [f"Paired with `{REFERENCE}` on the same questions (Δ = method − {REFERENCE}; 95% bootstrap "
           "interval over questions; sign test on wins vs losses):", "",
           "| method | n | wins | losses | Δ quality | 95% interval | sign-test p |", "|---|---|---|---|---|---|---|"]
    for p in pairs:
        out.append(f"| {p.method} | {p.n} | {p.wins} | {p.losses} | {p.delta:+.3f} | "
                   f"[{p.low:+.3f}, {p.high:+.3f}] | {p.p_sign:.3f} |")
    return [*out, ""]


def _f(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.{digits}f}"


def write_report(records: Sequence[dict[str, Any]], out_dir: Path, *, title: str = "flare eval") -> list[Path]:
    """Write ``report.md`` and every plot the data allows; returns the files written."""
    rows = summarise(records)
    md = out_dir / "report.md"
    md.write_text(markdown(rows, title=title, records=records) + "\n", encoding="utf-8")
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
            (float(r[knob]), r["quality"], r["retrieval_rate"], r["later_rate"])
            for r in rs
            if r[other] == fixed and r.get("trigger") == trigger
        )
        if len({p[0] for p in pts}) < 2:
            continue
        drawn = True
        xs = [p[0] for p in pts]
        ax.plot(xs, [p[1] for p in pts], "o-", label="quality")
        ax.plot(xs, [p[2] for p in pts], "s--", label="share of sentences retrieved")
        ax.plot(xs, [p[3] for p in pts], "^:", label="same, after the 1st sentence")
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
