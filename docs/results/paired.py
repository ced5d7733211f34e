"""Per-question wins/losses of every method against ``single`` (same questions), and how often
later retrievals brought in a gold passage that the question's own retrieval had missed.

Usage: ``python docs/results/paired.py docs/results/gemma3-test/results.jsonl``
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from flare.evaluate.harness import read_results


def main(path: str, ref: str = "single") -> None:
    by: dict[str, dict[str, dict[str, dict[str, Any]]]] = defaultdict(lambda: defaultdict(dict))
    for r in read_results(Path(path)):
        by[r["dataset"]][r["method"]][r["id"]] = r
    for ds, methods in sorted(by.items()):
        base = methods.get(ref, {})
        print(f"\n== {ds}: vs {ref}  (wins / losses / same answer text; n = common questions)")
        for m, recs in sorted(methods.items()):
            if m == ref:
                continue
            ids = sorted(set(recs) & set(base))
            win = sum(recs[i]["scores"]["quality"] > base[i]["scores"]["quality"] for i in ids)
            loss = sum(recs[i]["scores"]["quality"] < base[i]["scores"]["quality"] for i in ids)
            same = sum(recs[i]["prediction"] == base[i]["prediction"] for i in ids)
            # Questions where this method's retrievals cover more gold passages than single's
            # (its first retrieval is the same question search, so the gain comes from later ones).
            more_gold = sum((recs[i].get("gold_recall") or 0) > (base[i].get("gold_recall") or 0) for i in ids)
            print(f"{m}: n={len(ids)} wins {win} losses {loss} identical {same}, "
                  f"more gold passages retrieved {more_gold}")


if __name__ == "__main__":
    main(*sys.argv[1:])
