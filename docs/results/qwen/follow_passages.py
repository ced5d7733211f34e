"""Where the default's extra seconds go, read from eval traces (issue 16, round 4).

For each method: prompt tokens evaluated, output tokens, LM calls and seconds per answer, and a
least-squares split of the seconds over those three. For the default: the passages `follow_names`
added (the retrieved ids of accepted drafts' steps, which search for nothing else), how many of
them state the name searched for (every content word of the query that the question lacks is in
the title or text of the document the passage came from), and how many the answer cited.

    python docs/results/qwen/follow_passages.py docs/results/qwen/test3/*/results.jsonl
"""

from __future__ import annotations

import functools
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from flare.evaluate.datasets import doc_id
from flare.evaluate.harness import read_results
from flare.retrieve.corpus import read_documents
from flare.text import content_words

# Where a results record's dataset (its ``dataset`` field) keeps its corpus.jsonl. The two worlds
# number their passages alike (wp0000, ...), so each file is read against its own corpus.
FOLDERS = [Path("docs/results/world/data"), Path("../shared/data")]


@functools.cache
def passages(dataset: str) -> dict[str, set[str]]:
    """Content words of every document of ``dataset``'s corpus, by id."""
    for corpus in (folder / dataset / "corpus.jsonl" for folder in FOLDERS):
        if corpus.exists():
            return {d.id: content_words(f"{d.title} {d.text}") for d in read_documents(corpus)}
    raise SystemExit(f"no corpus.jsonl for dataset {dataset!r} under {', '.join(map(str, FOLDERS))}")


def report(path: str) -> None:
    rows = read_results(Path(path))
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
            asked, words = content_words(r["question"]), passages(r["dataset"])
            cited = {s["id"] for s in r["trace"]["sources"]}
            for step in r["trace"]["steps"]:
                if step["kind"] != "draft" or step["decision"] != "accept" or not step["queries"]:
                    continue
                name = {w for q in step["queries"] for w in content_words(q)} - asked
                for hit in step["retrieved"]:
                    states = name <= words.get(doc_id(hit["id"]), set())
                    c["added"] += 1
                    c["state the name"] += states
                    c["cited"] += hit["id"] in cited
                    c["cited, not stating it"] += hit["id"] in cited and not states
        print("   followed passages:", dict(c))
    fit, *_ = np.linalg.lstsq(np.array(x, float), np.array(y), rcond=None)
    per_token, per_output, per_call = fit
    print(f"   seconds per evaluated token {per_token:.4f}, per output token {per_output:.4f}, per call {per_call:.3f}")


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        report(arg)
