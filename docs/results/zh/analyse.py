"""Tables for docs/results/zh/README.md from `flare eval` runs on benchmarks/qinglan-zh.

For every run and method: fact recall over the answerable questions, answers with every fact,
stale and secret facts, leaks, the unsupported-sentence share (recomputed here for every run with
the support checker of :mod:`flare.evaluate.citations`, so runs made before it existed are measured
the same way), and two checks of the text: committed sentences that a cap or a loop cut mid-way
and that are shown as if whole (no sentence mark, no "…") and implicit queries that hold part of a word (a query whose
words are not whole words of its draft). Then each method of the second run paired with the same
method of the first on the same questions, and FLARE paired with single within each run.

Usage::

    python docs/results/zh/analyse.py BEFORE_DIR AFTER_DIR [more run dirs] > tables.md
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from flare.evaluate.citations import citation_scores
from flare.evaluate.harness import read_results
from flare.evaluate.metrics import mean, percentile
from flare.evaluate.report import bootstrap_interval, sign_test
from flare.text import fold, words
from flare.types import Answer, Citation, Sentence

CORPUS = Path(__file__).resolve().parents[3] / "benchmarks" / "qinglan-zh" / "corpus.jsonl"
ENDS = "。！？.!?…\"'”’」』）)"
METHODS = ("none", "single", "flare")


def corpus() -> dict[str, dict[str, Any]]:
    return {d["id"]: d for d in map(json.loads, CORPUS.read_text(encoding="utf-8").splitlines())}


def answer_of(rec: dict[str, Any], docs: dict[str, dict[str, Any]]) -> Answer:
    """The answer as committed, rebuilt from the record's trace and the corpus text of its sources."""
    trace = rec["trace"] or {"steps": [], "sources": []}
    sentences = tuple(Sentence(s["sentence"], bool(s["queries"]), tuple(s["citations"]))
                      for s in trace["steps"] if s["sentence"])
    sources = tuple(Citation(c["n"], c["id"], c["title"], docs[c["id"].split("#")[0]]["text"])
                    for c in trace["sources"])
    return Answer(rec["question"], sentences, sources, rec.get("stop_reason") or "", "")


def partial_word_query(draft: str, query: str) -> bool:
    """Is ``query`` not a sequence of whole words of ``draft`` (a masked query cut a word)?"""
    left = [fold(w) for w in words(draft)]
    for w in (fold(w) for w in words(query)):
        while left and not left[0].startswith(w) and w not in left[0]:
            left.pop(0)
        if not left:
            return True
        if left[0] == w:
            left.pop(0)
        elif left[0].startswith(w) or w in left[0]:
            return True  # the query holds a piece of a draft word
    return False


CUT_BY = ("max_seconds", "max_output_tokens", "max_sentence_tokens", "repetition")


def text_checks(recs: list[dict[str, Any]]) -> tuple[int, int, int, int, int]:
    """(sentences, cut mid-sentence and shown unmarked, cut and marked "…", implicit queries, with a
    partial word). A sentence is cut when it is the answer's last and a cap or a loop ended the
    answer while it had no sentence mark; a line the model itself ended without one is not counted."""
    n = unmarked = cut = queries = partial = 0
    for r in recs:
        written = [s for s in (r["trace"] or {}).get("steps", []) if s["sentence"].strip()]
        for s in (r["trace"] or {}).get("steps", []):
            text = s["sentence"].strip()
            if text:
                n += 1
                last = s is written[-1]
                unmarked += last and r.get("stop_reason") in CUT_BY and text[-1] not in ENDS
                cut += text.endswith("…")
            if s.get("draft") and s["queries"] and s["kind"] == "draft":
                for q in s["queries"]:
                    if q.strip() and not q.startswith(r["question"]):
                        queries += 1
                        partial += partial_word_query(s["draft"], q)
    return n, unmarked, cut, queries, partial


def table(runs: dict[str, list[dict[str, Any]]], docs: dict[str, dict[str, Any]]) -> list[str]:
    head = ("run", "method", "n", "fact recall", "all facts", "stale", "secret", "leak", "unsupported",
            "sentences/answer", "retrievals/answer", "p50 s", "cut, shown whole", "cut, marked …",
            "partial-word queries")
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for run, recs in runs.items():
        for method in METHODS:
            rs = [r for r in recs if r["method"] == method]
            if not rs:
                continue
            sc = [r["scores"] for r in rs]
            unsupported = [citation_scores(answer_of(r, docs))["unsupported"] for r in rs]
            n, unmarked, cut, queries, partial = text_checks(rs)
            out.append("| " + " | ".join([
                run, method, str(sum(s["quality"] is not None for s in sc)),
                f"{mean(s['quality'] for s in sc):.3f}", f"{mean(s.get('all_facts') for s in sc):.3f}",
                f"{mean(s['stale'] for s in sc):.3f}", f"{mean(s['secret'] for s in sc):.3f}",
                f"{mean(s.get('leak') for s in sc):.3f}", f"{mean(unsupported):.3f}",
                f"{mean(r['sentences'] for r in rs):.2f}", f"{mean(r['retrievals'] for r in rs):.2f}",
                f"{percentile([r['seconds'] for r in rs], 50):.1f}", f"{unmarked}/{n}", f"{cut}/{n}",
                f"{partial}/{queries}",
            ]) + " |")
    return out


def paired_rows(label: str, a: dict[str, float], b: dict[str, float]) -> str:
    """``b`` against ``a`` on the questions both have: Δ, 95% bootstrap interval, wins/losses, sign test."""
    ids = sorted(set(a) & set(b))
    diffs = [b[i] - a[i] for i in ids]
    low, high = bootstrap_interval(diffs)
    wins, losses = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    ma, mb = sum(a[i] for i in ids) / len(ids), sum(b[i] for i in ids) / len(ids)
    ratio = f"{mb / ma:.2f}" if ma else "–"
    return (f"| {label} | {len(ids)} | {ma:.3f} | {mb:.3f} | {ratio} | {mb - ma:+.3f} | [{low:+.3f}, {high:+.3f}] "
            f"| {wins} | {losses} | {sign_test(wins, losses):.3f} |")


def quality(recs: list[dict[str, Any]], method: str) -> dict[str, float]:
    return {r["id"]: float(r["scores"]["quality"]) for r in recs
            if r["method"] == method and r["scores"]["quality"] is not None}


def main(dirs: list[str]) -> None:
    docs = corpus()
    runs = {Path(d).name: read_results(Path(d) / "results.jsonl") for d in dirs}
    print("\n".join(table(runs, docs)))
    print("\n| comparison | n | A | B | B/A | Δ (B − A) | 95% interval | wins | losses | sign-test p |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    names = list(runs)
    first = names[0]
    for other in names[1:]:
        for method in METHODS:
            a, b = quality(runs[first], method), quality(runs[other], method)
            if a and b:
                print(paired_rows(f"{method}: {first} → {other}", a, b))
    for name in names:
        a, b = quality(runs[name], "single"), quality(runs[name], "flare")
        if a and b:
            print(paired_rows(f"{name}: single → flare", a, b))
    by_lang: dict[str, list[float]] = defaultdict(list)
    for name in names:
        for r in runs[name]:
            if r["scores"]["quality"] is not None:
                lang = "zh" if any("\u4e00" <= c <= "\u9fff" for c in r["question"]) else "en"
                by_lang[f"{name} {r['method']} {lang}"].append(float(r["scores"]["quality"]))
    print("\n| run, method, question language | n | fact recall |\n|---|---|---|")
    for key, values in sorted(by_lang.items()):
        print(f"| {key} | {len(values)} | {sum(values) / len(values):.3f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
