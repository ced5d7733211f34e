"""Where the default's extra seconds go, read from eval traces (issue 16, round 4).

For each method: prompt tokens evaluated, output tokens, LM calls and seconds per answer, and a
least-squares split of the seconds over those three. For the default: the passages `follow_names`
added (the retrieved ids of accepted drafts' steps, which search for nothing else), how many of
them state the name searched for (every content word of the query that the question lacks is in
the passage's title or text), and how many the answer cited.

    python docs/results/qwen/follow_passages.py docs/results/qwen/test3/*/results.jsonl
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from flare.text import content_words

CORPORA = [
    "docs/results/world/data/world/corpus.jsonl",
    "docs/results/world/data/world-s1/corpus.jsonl",
    "../shared/data/2wikimultihopqa/corpus.jsonl",
    "../shared/data/hotpotqa/corpus.jsonl",
]


def passages() -> dict[str, set[str]]:
    """Content words of every passage, by id (a chunk id ``X#n`` reads its passage ``X``)."""
    out: dict[str, set[str]] = {}
    for path in map(Path, CORPORA):
        if path.exists():
            for line in path.read_text("utf-8").splitlines():
                d = json.loads(line)
                out.setdefault(d["id"], content_words(f"{d.get('title', '')} {d['text']}"))
    return out


def report(path: str, words: dict[str, set[str]]) -> None:
    rows: list[dict[str, Any]] = [json.loads(line) for line in Path(path).read_text("utf-8").splitlines()]
    x, y = [], []
    for method in sorted({r["method"] for r in rows}):
        got = [r for r in rows if r["method"] == method and r["trace"]]
        t = [(r["trace"]["lm_tokens_evaluated"], r["trace"]["output_tokens"], r["trace"]["lm_calls"]) for r in got]
        x += t
        y += [r["seconds"] for r in got]
        ev, out, calls = np.mean(t, axis=0)
        sec = np.mean([r["seconds"] for r in got])
        print(f"{path}  {method}  n={len(got)}  evaluated {ev:.0f}  output {out:.0f}  calls {calls:.2f}  s {sec:.1f}")
        if method == "single":
            continue
        c: Counter[str] = Counter()
        for r in got:
            asked = content_words(r["question"])
            cited = {s["id"] for s in r["trace"]["sources"]}
            for step in r["trace"]["steps"]:
                if step["kind"] != "draft" or step["decision"] != "accept" or not step["queries"]:
                    continue
                name = {w for q in step["queries"] for w in content_words(q)} - asked
                for hit in step["retrieved"]:
                    states = name <= words.get(hit["id"].split("#")[0], set())
                    c["added"] += 1
                    c["state the name"] += states
                    c["cited"] += hit["id"] in cited
                    c["cited, not stating it"] += hit["id"] in cited and not states
        print("   followed passages:", dict(c))
    fit, *_ = np.linalg.lstsq(np.array(x, float), np.array(y), rcond=None)
    per_token, per_output, per_call = fit
    print(f"   seconds per evaluated token {per_token:.4f}, per output token {per_output:.4f}, per call {per_call:.3f}")


if __name__ == "__main__":
    corpus = passages()
    for arg in sys.argv[1:]:
        report(arg, corpus)
