"""Tables and a plot for the verified-answers runs (issue 9), from ``flare eval`` results files.

For each dataset and method: quality (ASQA STR-EM and ROUGE-L; world fact recall from the ground
truth), the unsupported shares (world: exact, from the ground truth; both: the lexical checker's
ALCE-style figures), the share of answers naming something only the prompt's exemplars contain,
the share of answers with a looping sentence (a word 4-gram said twice), and cost. Every method is
paired with the reference (today's default) on the same questions. On the world, the checker's
own precision and recall against the truth are scored on the sentences of the verify=flag run.

Usage::

    python docs/results/verify/analyse.py --reference LABEL --out DIR RESULTS.jsonl [...] \
        [--shipped RESULTS.jsonl ...]   # runs of other code: their labels get the prefix "shipped:"
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from flare.evaluate.citations import citation_scores
from flare.evaluate.datasets import doc_id, load_dataset
from flare.evaluate.harness import read_results
from flare.evaluate.metrics import mean, percentile
from flare.evaluate.prompts import style_for, template_for
from flare.evaluate.report import paired
from flare.evaluate.world import load_world
from flare.evaluate.world.score import FIGURES as TRUTH
from flare.evaluate.world.truth import Judge
from flare.text import repeated_ngram, words
from flare.types import Answer, Citation, Passage, Sentence
from flare.verify.support import exemplar_leaks

sys.path.insert(0, str(Path(__file__).parent))
from calibrate import cases, score  # noqa: E402

WORLD = Path(__file__).resolve().parents[1] / "world" / "data" / "world"
COLUMNS = [
    ("n", "n", 0), ("quality", "STR-EM", 3), ("rouge_l", "ROUGE-L", 3),
    ("truth_fact_recall", "fact recall (truth)", 3), ("truth_cited_unsupported", "cited & unsupported (truth)", 3),
    ("truth_unsupported_share", "unsupported (truth)", 3), ("truth_unmarked_unsupported", "unsupported, unmarked (truth)", 3),
    ("truth_citation_precision", "citation precision (truth)", 3),
    ("citation_recall", "citation recall (checker)", 3), ("citation_precision", "citation precision (checker)", 3),
    ("cited_unsupported", "cited & unsupported (checker)", 3), ("shown_unsupported", "unmarked unsupported (checker)", 3),
    ("flagged", "flagged", 3), ("leak", "exemplar leak", 3), ("loop", "looping", 3),
    ("sentences", "sentences", 2), ("lm_calls", "LM calls", 2), ("retrievals", "retrievals", 2), ("p50", "p50 s", 1),
]  # fmt: skip
PAIRED = ("quality", "truth_fact_recall", "truth_cited_unsupported", "truth_unmarked_unsupported", "cited_unsupported",
          "unsupported")


def corpus_of(dataset: str) -> dict[str, Passage]:
    folder = WORLD if dataset == "world" else load_dataset(dataset).folder
    with (folder / "corpus.jsonl").open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    return {str(r["id"]): Passage(str(r["id"]), r["text"], r.get("title", "")) for r in rows}


def rescore(rec: dict[str, Any], corpus: dict[str, Passage], judge: Judge | None) -> None:
    """Recompute the citation figures from the trace, as the current code cites.

    Runs made before a flagged sentence stopped citing its passages (the development runs) are
    scored as the current code would have cited: the text is the same, only citations differ.
    """
    trace = rec.get("trace")
    if rec.get("error") or not trace:
        return
    ids = {s["n"]: s["id"] for s in trace["sources"]}
    # With verify=off nothing is marked for support: a verdict in such a trace is the support
    # trigger's on its draft (before commit 'draft_support' recorded it apart).
    verified = rec["settings"].get("verify", "off") != "off"
    sentences = []
    for step in trace["steps"]:
        if not step.get("sentence"):
            continue
        failed = verified and step.get("support") in ("partial", "unsupported")
        flagged = failed or not step.get("grounded", True)
        cited = [] if failed else [ids[n] for n in step["citations"]]
        support = step.get("support", "unchecked") if verified else "unchecked"
        sentences.append((step["sentence"], cited, flagged, support, step.get("grounded", True)))
    used = list(dict.fromkeys(i for _, cited, _, _, _ in sentences for i in cited))
    number = {pid: n for n, pid in enumerate(used, start=1)}
    answer = Answer(rec["question"], tuple(
        Sentence(text, True, tuple(number[i] for i in cited), grounded, support)
        for text, cited, _, support, grounded in sentences
    ), tuple(Citation(number[i], i, corpus[doc_id(i)].title, corpus[doc_id(i)].text) for i in used), "end", "")  # fmt: skip
    rec["scores"].update(citation_scores(answer))
    if judge is not None:
        verdict = judge.judge(rec["id"], [(text, cited) for text, cited, _, _, _ in sentences])
        rec["scores"].update({f"truth_{k}": v for k, v in verdict.scores().items() if k in TRUTH})
        # The promise to the user: a sentence shown without a mark is backed. Share of claim
        # sentences the truth does not back and the answer does not mark.
        claims = [(v, flagged) for v, (_, _, flagged, _, _) in zip(verdict.sentences, sentences, strict=True)
                  if v.status != "no_claims"]  # fmt: skip
        rec["scores"]["truth_unmarked_unsupported"] = (
            sum(1 for v, flagged in claims if not v.supported and not flagged) / len(claims) if claims else None
        )


_VOCABULARY: dict[str, set[str]] = {}


def vocabulary(dataset: str, corpus: dict[str, Passage]) -> set[str]:
    """Folded words of a dataset's whole corpus: a name found there is not the exemplars' alone."""
    if dataset not in _VOCABULARY:
        _VOCABULARY[dataset] = {w.casefold() for p in corpus.values() for w in words(f"{p.title} {p.text}")}
    return _VOCABULARY[dataset]


def extras(rec: dict[str, Any], corpus: dict[str, Passage]) -> dict[str, float | None]:
    """Exemplar leak and looping for one record (None for a failed example)."""
    trace = rec.get("trace")
    if rec.get("error") or not trace:
        return {"leak": None, "loop": None}
    sentences = [s["sentence"] for s in trace["steps"] if s.get("sentence")]
    header = template_for(rec["dataset"], layout="plain", style=style_for(rec["settings"]["method"])).header
    seen = {r["id"] for s in trace["steps"] for r in s["retrieved"]}
    passages = [corpus[doc_id(i)] for i in seen if doc_id(i) in corpus]
    names = {n for s in sentences for n in exemplar_leaks(s, header, rec["question"], passages)}
    leak = any(n.casefold() not in vocabulary(rec["dataset"], corpus) for n in names)
    loop = any(repeated_ngram(s, 4) is not None for s in sentences)
    return {"leak": float(leak), "loop": float(loop)}


def table(records: list[dict[str, Any]], dataset: str) -> list[str]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r["dataset"] == dataset:
            groups[r["method"]].append(r)
    keys = [c for c in COLUMNS if any(_value(r, c[0]) is not None for rs in groups.values() for r in rs)
            or c[0] in ("n", "p50")]  # fmt: skip
    out = ["| method | " + " | ".join(c[1] for c in keys) + " |", "|---|" + "---|" * len(keys)]
    for method, rs in groups.items():
        cells = []
        for key, _, digits in keys:
            if key == "n":
                value: float = len(rs)
            elif key == "p50":
                value = percentile([r["seconds"] for r in rs], 50)
            else:
                value = mean(_value(r, key) for r in rs)
            cells.append("–" if math.isnan(value) else f"{value:.{digits}f}")
        out.append(f"| {method} | " + " | ".join(cells) + " |")
    return out


def _value(rec: dict[str, Any], key: str) -> float | None:
    if key in ("sentences", "lm_calls", "retrievals"):
        return float(rec[key])
    v = rec["scores"].get(key, rec.get("_extra", {}).get(key))
    return None if v is None else float(v)


def paired_tables(records: list[dict[str, Any]], dataset: str, reference: str) -> list[str]:
    out = []
    for metric in PAIRED:
        pairs = paired(records, dataset, reference, metric=metric)
        if not pairs:
            continue
        out += [f"Paired with `{reference}`: Δ {metric} (method − reference, 95% bootstrap interval, sign test)", "",
                "| method | n | better | worse | Δ | 95% interval | p |", "|---|---|---|---|---|---|---|"]
        lower_better = "unsupported" in metric
        for p in pairs:
            better, worse = (p.losses, p.wins) if lower_better else (p.wins, p.losses)
            out.append(f"| {p.method} | {p.n} | {better} | {worse} | {p.delta:+.3f} | [{p.low:+.3f}, {p.high:+.3f}] "
                       f"| {p.p_sign:.3f} |")
        out.append("")
    return out


def plot(records: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(dict.fromkeys(r["dataset"] for r in records))
    fig, axes = plt.subplots(1, len(datasets), figsize=(6 * len(datasets), 4.5), squeeze=False)
    for ax, ds in zip(axes[0], datasets, strict=True):
        world = ds == "world"
        # World: what the truth does not back and the answer shows unmarked, against fact recall.
        # ASQA has no truth: the checker's own unmarked share (by construction ~0 with verify on).
        xk, yk = ("truth_unmarked_unsupported", "truth_fact_recall") if world else ("shown_unsupported", "quality")
        labels = {"truth_unmarked_unsupported": "unsupported in truth, shown unmarked",
                  "truth_fact_recall": "fact recall (truth)", "shown_unsupported": "unsupported by the checker, unmarked",
                  "quality": "STR-EM"}  # fmt: skip
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in records:
            if r["dataset"] == ds:
                groups[r["method"]].append(r)
        for method, rs in groups.items():
            x, y = mean(_value(r, xk) for r in rs), mean(_value(r, yk) for r in rs)
            ax.scatter(x, y)
            ax.annotate(method, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.set(title=ds, xlabel=labels[xk], ylabel=labels[yk])
        ax.margins(0.25)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, nargs="+")
    ap.add_argument("--reference", required=True, help="the method label every method is paired with")
    ap.add_argument("--checker-run", default="flare:verify=flag", help="world method whose sentences score the checker")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shipped", type=Path, nargs="*", default=[], help="results of other code, labelled 'shipped:'")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    records = [r for p in args.results for r in read_results(p)]
    records += [{**r, "method": f"shipped:{r['method']}"} for p in args.shipped for r in read_results(p)]
    corpora: dict[str, dict[str, Passage]] = {}
    judge = Judge(load_world(WORLD))
    for r in records:
        corpus = corpora.setdefault(r["dataset"], corpus_of(r["dataset"]))
        rescore(r, corpus, judge if r["dataset"] == "world" else None)
        r["_extra"] = extras(r, corpus)
    lines = ["# Verified answers: held-out results", ""]
    for ds in dict.fromkeys(r["dataset"] for r in records):
        lines += [f"## {ds}", "", *table(records, ds), "", *paired_tables(records, ds, args.reference)]
    flagged = [r for r in records if r["dataset"] == "world" and r["method"] == args.checker_run]
    if flagged:
        tmp = args.out / "_checker.jsonl"
        tmp.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "_extra"}) + "\n" for r in flagged),
                       encoding="utf-8")  # fmt: skip
        cs = cases(WORLD, [tmp], None)
        tmp.unlink()
        from flare.verify.support import DEFAULT

        p, rec, f1, bad, n = score(cs, DEFAULT)
        lines += ["## The checker against the world's truth", "",
                  f"Sentences of `{args.checker_run}` ({n} with claims, {bad} unsupported in truth), default thresholds: "
                  f"precision {p:.3f}, recall {rec:.3f}, F1 {f1:.3f} of the flag.", ""]  # fmt: skip
    (args.out / "analysis.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    plot(records, args.out / "support_vs_quality.png")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
