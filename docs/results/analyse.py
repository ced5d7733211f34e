"""Evidence for the README: calibration of drafts, answer extraction, retrieval recall, agreement.

Reads a ``flare eval`` results.jsonl and prints plain-text tables. Usage:
``python docs/results/analyse.py docs/results/smollm2-dev/results.jsonl``
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from flare.evaluate.harness import read_results
from flare.evaluate.metrics import exact_match, extract_answer, mean

THETAS = (0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 1.0)


def main(path: str) -> None:
    records = read_results(Path(path))
    answer_sentence_retrievals(records)
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by[(r["dataset"], r["method"])].append(r)
    datasets = sorted({d for d, _ in by})
    for ds in datasets:
        ids = set.intersection(*({r["id"] for r in rs} for (d, _), rs in by.items() if d == ds))
        print(f"\n== {ds}: {len(ids)} questions answered by every method")
        print("method | quality | 'So the answer is' written by the method | gold recall | mean sentences"
              " | answers with 2+ sentences")
        for (d, m), rs in sorted(by.items()):
            if d != ds:
                continue
            rs = [r for r in rs if r["id"] in ids]
            print(f"{m} | {mean(r['scores']['quality'] for r in rs):.3f} | "
                  f"{mean(r['scores'].get('answer_cue') for r in rs):.2f} | "
                  f"{mean(r.get('gold_recall') for r in rs):.3f} | {mean(r['sentences'] for r in rs):.2f} | "
                  f"{mean(float(r['sentences'] >= 2) for r in rs):.2f}")
        single = {r["id"]: r["prediction"] for r in by.get((ds, "single"), [])}
        for (d, m), rs in sorted(by.items()):
            same = [r["prediction"] == single.get(r["id"]) for r in rs if d == ds and r["id"] in single]
            if same and m != "single":
                print(f"{m}: identical answer text to single on {sum(same)}/{len(same)}")
        # Calibration: FLARE at θ=1 drafts every later sentence, so its drafts show what any θ would do.
        every = [r for (d, _), rs in by.items() if d == ds for r in rs
                 if r["settings"]["method"] == "flare" and float(r["settings"]["theta"]) >= 1.0]
        mins = [min(p for _, p in s["draft_tokens"]) for r in every for s in r["trace"]["steps"] if s["draft_tokens"]]
        if mins:
            print(f"drafted sentences: {len(mins)}; min token p: median {sorted(mins)[len(mins) // 2]:.3f}")
            print("theta -> share of drafted sentences that would retrieve: " + ", ".join(
                f"{t}: {sum(m < t for m in mins) / len(mins):.2f}" for t in THETAS))


def answer_sentence_retrievals(records: list[dict[str, Any]]) -> None:
    """What retrieval did to drafted "So the answer is …" sentences (FLARE direct, short answers).

    For each drafted sentence that states the final answer and triggered retrieval, compare the
    drafted answer with the answer of the sentence written after the search.
    """
    by: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for r in records:
        if r["task"] != "short" or r["settings"]["method"] != "flare" or not r.get("trace"):
            continue
        for s in r["trace"]["steps"]:
            draft, cue = extract_answer(s.get("draft") or "")
            if not s.get("draft_tokens") or not cue:
                continue
            c = by[(r["dataset"], r["method"])]
            c[0] += 1
            if not s["queries"]:
                continue
            c[1] += 1
            final, _ = extract_answer(s["sentence"] or "")
            before, after = exact_match(draft, r["answers"]), exact_match(final, r["answers"])
            c[2] += int(before > after)
            c[3] += int(after > before)
            c[4] += int(draft != final)
    if by:
        print("\n== drafted answer sentences ('So the answer is'): drafted | retrieved | right->wrong | "
              "wrong->right | answer changed")
        for (ds, m), c in sorted(by.items()):
            print(f"{ds} {m}: " + " | ".join(map(str, c)))


if __name__ == "__main__":
    main(sys.argv[1])
