"""Offline check of one idea (round 18, not run): keep a draft when its rewrite is no better backed.

For every rewrite in the default's traces (a step whose draft the question's or the answer's
passages did not back, searched for and written again), the support checker (at the `[?]`
mark's coverage, 0.6) judges the draft and the rewritten sentence against the same passages:
those the rewritten sentence was checked against, found ones cut to their excerpts as the
prompt read them. The rule under study keeps the draft when its coverage is at least the
rewrite's. As a proxy for which sentence is right, each is asked whether it contains a gold
answer (normalised); rewrites that change the gold answer's presence are counted by the rule's
side. The checker's coverage of the rewrite reproduces the trace's (a check of the set-up).

Usage::

    python docs/results/qwen/keep_draft.py docs/results/qwen/test17/hotpotqa/results.jsonl
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from flare.engine.policies import excerpt
from flare.evaluate.metrics import normalize
from flare.retrieve.tantivy_index import TantivyRetriever
from flare.types import Passage
from flare.verify.support import DEFAULT, check

INDEXES = Path(__file__).resolve().parents[3] / ".flare" / "indexes"
MARK = replace(DEFAULT, supported=0.6)
_open: dict[str, list[TantivyRetriever]] = {}


def passage(dataset: str, pid: str) -> Passage | None:
    """The passage from any local index built for ``dataset`` (the newest first)."""
    if dataset not in _open:
        dirs = sorted(INDEXES.glob(f"{dataset}-*"), key=lambda p: p.stat().st_mtime, reverse=True)
        _open[dataset] = [TantivyRetriever(d, verify=False) for d in dirs]
    return next((p for r in _open[dataset] if (p := r.get(pid)) is not None), None)


def tally(record: dict[str, Any], counts: Counter[tuple[str, ...]]) -> None:
    gold = [g for g in (normalize(a) for a in record["answers"]) if g]
    said: list[str] = []
    first: list[str] = []
    for step in record["trace"]["steps"]:
        if step["kind"] == "initial" and not first:
            first = [d["id"] for d in step.get("retrieved") or []][: record["settings"]["k"]]
        if "regenerate" in (step.get("timings") or {}) and step["draft"] and step["sentence"]:
            queries = step.get("queries") or []
            if step["kind"] == "initial":
                queries = queries[1:]  # the first is the question's own search
            docs = []
            for pid in step.get("evidence") or []:
                p = passage(record["dataset"], pid)
                if p is not None:
                    docs.append(p if pid in first else excerpt(p, queries))
            context = [record["question"], *said]
            draft = check(step["draft"], docs, context=context, thresholds=MARK).coverage
            rewrite = check(step["sentence"], docs, context=context, thresholds=MARK).coverage
            counts[("reproduced", str(abs(rewrite - (step.get("coverage") or 0.0)) < 1e-6))] += 1
            in_draft = any(g in normalize(step["draft"]) for g in gold)
            in_rewrite = any(g in normalize(step["sentence"]) for g in gold)
            if in_draft != in_rewrite:
                side = "kept (draft at least as backed)" if draft >= rewrite else "rewritten"
                counts[(side, "gold only in the draft" if in_draft else "gold only in the rewrite")] += 1
        if step["sentence"]:
            said.append(step["sentence"])


def main(paths: list[str]) -> None:
    counts: Counter[tuple[str, ...]] = Counter()
    for path in paths:
        with Path(path).open(encoding="utf-8") as lines:
            for line in lines:
                record = json.loads(line)
                if record["method"] != "single" and not record.get("error"):
                    tally(record, counts)
    for key, n in sorted(counts.items()):
        print(" / ".join(key), n)


if __name__ == "__main__":
    main(sys.argv[1:])
