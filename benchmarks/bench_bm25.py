"""Time the embedded BM25 retriever on the 2WikiMultihopQA passage pool.

Builds an index of ``corpus.jsonl`` (9,452 passages, indexed as given; ``--chunk`` cuts the
long ones into ~100-word pieces first), then runs the first ``--questions`` questions of
``questions.jsonl`` as queries and prints build time, query latency p50/p95 and, as a sanity
check that the figures come from a working index, the recall of the gold supporting passages.

Usage::

    .venv/bin/python benchmarks/bench_bm25.py [--data DIR] [--questions 200] [--k 5] [--chunk]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from flare.errors import FlareError
from flare.evaluate.datasets import dataset_dir
from flare.evaluate.metrics import percentile
from flare.retrieve.corpus import load_corpus, read_documents
from flare.retrieve.tantivy_index import TantivyRetriever, build_index

DEFAULT_DATASET = "2wikimultihopqa"  # looked up under $FLARE_DATA, else ../shared/data



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help=f"dataset folder (default: {DEFAULT_DATASET})")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--chunk", action="store_true", help="chunk long passages first")
    args = parser.parse_args()
    args.data = dataset_dir(args.data or DEFAULT_DATASET)

    started = time.perf_counter()
    corpus = args.data / "corpus.jsonl"
    passages = load_corpus(corpus) if args.chunk else read_documents(corpus)
    load_s = time.perf_counter() - started
    with args.data.joinpath("questions.jsonl").open(encoding="utf-8") as fh:
        questions = [json.loads(line) for line, _ in zip(fh, range(args.questions), strict=False)]

    with tempfile.TemporaryDirectory() as tmp:
        info = build_index(passages, Path(tmp) / "index")
        opened = time.perf_counter()
        bm25 = TantivyRetriever(info.path)
        open_s = time.perf_counter() - opened
        bm25.search("warm up", k=args.k)
        latencies: list[float] = []
        found = gold = 0
        for q in questions:
            t0 = time.perf_counter()
            hits = bm25.search(q["question"], k=args.k)
            latencies.append((time.perf_counter() - t0) * 1000)
            wanted = set(q.get("supporting_ids") or [])
            gold += len(wanted)
            found += len(wanted & {h.passage.id.partition("#")[0] for h in hits})

    what = "read and chunk" if args.chunk else "read"
    print(f"passages            {len(passages)} ({load_s:.2f} s to {what})")
    print(f"build               {info.seconds:.2f} s  ({len(passages) / info.seconds:.0f} passages/s)")
    print(f"open                {open_s * 1000:.1f} ms")
    print(f"queries             {len(latencies)} at k={args.k}")
    print(f"latency p50         {percentile(latencies, 50):.2f} ms")
    print(f"latency p95         {percentile(latencies, 95):.2f} ms")
    print(f"latency mean        {statistics.fmean(latencies):.2f} ms")
    if gold:
        print(f"gold recall@{args.k}       {found / gold:.3f} ({found}/{gold} supporting passages)")


if __name__ == "__main__":
    try:
        main()
    except FlareError as err:  # e.g. no dataset: one line with the hint, no traceback
        raise SystemExit(f"error: {err}") from None
