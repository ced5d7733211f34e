"""Does the draft confidence mean anything? Trigger rates per θ, and confidence vs correctness.

Reads a ``flare eval`` results.jsonl and uses the drafts of every method whose traces hold them
(``flare-every`` drafts every sentence after the first, so it shows what any θ would do). For each
drafted sentence it re-applies the engine's own trigger (:func:`flare.engine.judge.judge`) with
``trigger=min`` and ``trigger=content`` at several θ, and, for drafts that state the final answer
("So the answer is …") on short-answer datasets, compares the draft's confidence with whether the
drafted answer is right. Usage:
``python docs/results/calibration.py docs/results/gemma3-test/results.jsonl [method]``
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from flare.config import Settings
from flare.engine.judge import judge
from flare.evaluate.harness import read_results
from flare.evaluate.metrics import exact_match, extract_answer
from flare.types import TokenLogprob

THETAS = (0.2, 0.4, 0.6, 0.8, 0.9)


def scores(step: dict[str, Any]) -> tuple[float, float]:
    """(min-rule score, content-rule score) of one draft, as the engine computes them."""
    toks = [TokenLogprob(t, math.log(max(p, 1e-12))) for t, p in step["draft_tokens"]]
    text = step["draft"] or ""
    return (judge(text, toks, Settings(trigger="min", theta=0.5)).score,
            judge(text, toks, Settings(trigger="content", theta=0.5)).score)


def share(xs: list[float]) -> str:
    return f"{sum(xs) / len(xs):.2f} (n={len(xs)})" if xs else "- (n=0)"


def median(xs: list[float]) -> float:
    s = sorted(xs)
    return s[len(s) // 2] if s else float("nan")


def main(path: str, method: str = "flare-every") -> None:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in read_results(Path(path)):
        if r["method"] == method and r.get("trace"):
            by[r["dataset"]].append(r)
    for ds, recs in sorted(by.items()):
        drafts = [(r, s) for r in recs for s in r["trace"]["steps"] if s["draft_tokens"]]
        if not drafts:
            continue
        sc = [scores(s) for _, s in drafts]
        mins, conts = [a for a, _ in sc], [b for _, b in sc]
        print(f"\n== {ds} / {method}: {len(recs)} answers, {len(drafts)} drafted sentences")
        print(f"median score: min rule {median(mins):.3f}, content rule {median(conts):.3f}")
        print("theta | share that would retrieve: min rule | content rule")
        for t in THETAS:
            print(f"{t} | {sum(m < t for m in mins) / len(mins):.2f} | {sum(c < t for c in conts) / len(conts):.2f}")
        # Lowest-probability words of the drafts under the content rule: what triggers retrieval.
        low: dict[str, int] = defaultdict(int)
        for _, s in drafts:
            toks = [TokenLogprob(t, math.log(max(p, 1e-12))) for t, p in s["draft_tokens"]]
            j = judge(s["draft"] or "", toks, Settings(trigger="content", theta=0.6))
            for w, _ in j.low_tokens:
                low[w.strip()] += 1
        print("most frequent content words below 0.6:", ", ".join(
            f"{w} ({n})" for w, n in sorted(low.items(), key=lambda kv: -kv[1])[:15]))
        if recs[0]["task"] != "short":
            continue
        # Confidence vs correctness on the drafts that state the final answer.
        rows = []
        for r, s in drafts:
            ans, cue = extract_answer(s["draft"] or "")
            if cue:
                m, c = scores(s)
                rows.append((m, c, exact_match(ans, r["answers"])))
        if rows:
            print(f"answer drafts ('So the answer is'): {len(rows)}, EM of the drafted answer "
                  f"{sum(e for *_, e in rows) / len(rows):.2f}")
            for name, idx in (("min", 0), ("content", 1)):
                for t in (0.4, 0.6, 0.8):
                    hi = [e for *x, e in rows if x[idx] >= t]
                    lo = [e for *x, e in rows if x[idx] < t]
                    print(f"  {name} rule, θ={t}: EM when confident {share(hi)}, when unsure {share(lo)}")


if __name__ == "__main__":
    main(*sys.argv[1:])
