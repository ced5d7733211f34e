"""Latency and gold-passage recall of every retriever backend, side by side.

Part 1 — 2WikiMultihopQA (``corpus.jsonl``, 9,452 passages as given; the first ``--questions``
questions as queries): build time, query latency p50/p95 and recall@k of the gold
``supporting_ids`` for tantivy BM25, dense, hybrid and Milvus Lite in bm25/dense/hybrid mode.
Passages are embedded once; Milvus reuses those vectors, so its build time excludes embedding.

Part 2 — synthetic scale (``--synthetic N``): N generated passages (Zipf-distributed words, an
ACL field) for the embedded backends. BM25 indexes the text; the dense index gets random unit
vectors instead of embeddings (search cost depends on the matrix size, not on what the vectors
mean, and embedding N passages would take hours on two cores). Queries are timed without and
with an ACL filter that keeps ~10 % of the rows. Query embedding time is part 1's dense latency.

Usage::

    .venv/bin/python benchmarks/bench_retrievers.py [--questions 200] [--k 5] [--synthetic 100000]
        [--synthetic-dense 100000] [--skip-wiki] [--skip-milvus]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from flare.errors import FlareError
from flare.evaluate.datasets import dataset_dir
from flare.evaluate.metrics import percentile
from flare.retrieve.base import Retriever
from flare.retrieve.corpus import read_documents
from flare.retrieve.dense import (
    DenseRetriever,
    MiniLMEmbedder,
    Vectors,
    build_dense_index,
    passage_text,
)
from flare.retrieve.filters import NO_FILTERS, Filters
from flare.retrieve.hybrid import HybridRetriever
from flare.retrieve.tantivy_index import TantivyRetriever, build_index
from flare.types import Passage

DEFAULT_DATASET = "2wikimultihopqa"  # looked up under $FLARE_DATA, else ../shared/data


class CachedEmbedder:
    """Serves vectors already computed for known texts; embeds the rest with ``model``."""

    def __init__(self, model: MiniLMEmbedder, texts: Sequence[str], vectors: Vectors) -> None:
        self.model, self.name, self.dim = model, model.name, model.dim
        self.rows = {t: i for i, t in enumerate(texts)}
        self.vectors = vectors

    def embed(self, texts: Sequence[str]) -> Vectors:
        if all(t in self.rows for t in texts):
            return np.asarray(self.vectors[[self.rows[t] for t in texts]], dtype=np.float32)
        return self.model.embed(texts)


class RandomEmbedder:
    """Deterministic random unit vectors (for timing search at scale, not for quality)."""

    name, dim = "random-384", 384

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            v = np.random.default_rng(abs(hash(t)) % 2**32).standard_normal(self.dim)
            out[i] = v / np.linalg.norm(v)
        return out



def measure(r: Retriever, queries: list[str], k: int, filters: Filters = NO_FILTERS,
            gold: list[set[str]] | None = None) -> dict[str, float]:  # fmt: skip
    r.search(queries[0], k=k, filters=filters)  # warm up (model load, caches)
    latencies, found, total = [], 0, 0
    for i, q in enumerate(queries):
        t = time.perf_counter()
        hits = r.search(q, k=k, filters=filters)
        latencies.append((time.perf_counter() - t) * 1000)
        if gold is not None:
            found += len(gold[i] & {h.passage.id for h in hits})
            total += len(gold[i])
    return {"p50_ms": percentile(latencies, 50), "p95_ms": percentile(latencies, 95),
            "mean_ms": statistics.fmean(latencies), "recall": found / total if total else float("nan")}  # fmt: skip


def row(name: str, build_s: float, m: dict[str, float]) -> str:
    recall = "" if m["recall"] != m["recall"] else f"{m['recall']:.3f}"
    return f"| {name} | {build_s:.1f} | {m['p50_ms']:.2f} | {m['p95_ms']:.2f} | {recall} |"


def wiki(args: argparse.Namespace, tmp: Path) -> None:
    passages = read_documents(args.data / "corpus.jsonl")
    with (args.data / "questions.jsonl").open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line, _ in zip(fh, range(args.questions), strict=False)]
    queries = [r["question"] for r in rows]
    gold = [set(r.get("supporting_ids") or []) for r in rows]
    print(f"\n## 2WikiMultihopQA: {len(passages)} passages, {len(queries)} questions, k={args.k}\n")
    print("| retriever | build s | p50 ms | p95 ms | recall@k |\n|---|---|---|---|---|")
    t = time.perf_counter()
    build_index(passages, tmp / "bm25")
    bm25_s = time.perf_counter() - t
    bm25 = TantivyRetriever(tmp / "bm25")
    print(row("bm25 (tantivy)", bm25_s, measure(bm25, queries, args.k, gold=gold)), flush=True)
    model = MiniLMEmbedder()
    t = time.perf_counter()
    build_dense_index(passages, tmp / "dense", embedder=model)
    dense_s = time.perf_counter() - t
    dense = DenseRetriever(tmp / "dense", embedder=model)
    print(row("dense (MiniLM, exact)", dense_s, measure(dense, queries, args.k, gold=gold)), flush=True)
    hybrid = HybridRetriever(bm25, dense)
    print(row("hybrid (RRF)", bm25_s + dense_s, measure(hybrid, queries, args.k, gold=gold)), flush=True)
    if args.skip_milvus:
        return
    from flare.retrieve.milvus import MilvusRetriever, build_collection

    cached = CachedEmbedder(model, [passage_text(p) for p in passages], np.load(tmp / "dense" / "vectors.npy"))
    uri = str(tmp / "milvus.db")
    t = time.perf_counter()
    build_collection(passages, uri, "wiki", embedder=cached)
    milvus_s = time.perf_counter() - t
    for mode in ("bm25", "dense", "hybrid"):
        r = MilvusRetriever(uri, "wiki", mode=mode, embedder=model)
        print(row(f"milvus-lite {mode}", milvus_s, measure(r, queries, args.k, gold=gold)), flush=True)


def synthetic_passages(n: int, seed: int = 0) -> list[Passage]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(50_000)]
    cum = list(itertools.accumulate(1 / (i + 1) for i in range(len(vocab))))  # Zipf weights
    groups = [f"g{i}" for i in range(10)]
    out = []
    for i in range(n):
        words = rng.choices(vocab, cum_weights=cum, k=60)
        out.append(Passage(f"s{i}", " ".join(words), f"doc {i}", {"acl": [rng.choice(groups)]}))
    return out


def synthetic(args: argparse.Namespace, tmp: Path) -> None:
    n = args.synthetic
    n_dense = min(n, args.synthetic_dense)
    t = time.perf_counter()
    passages = synthetic_passages(n)
    gen_s = time.perf_counter() - t
    rng = random.Random(1)
    queries = [" ".join(rng.choices([f"w{i}" for i in range(20, 5000)], k=8)) for _ in range(args.questions)]
    acl = Filters.any_of("acl", ["g3"])
    print(f"\n## Synthetic: {n} passages of 60 Zipf words (generated in {gen_s:.1f}s; dense: the first "
          f"{n_dense}), {len(queries)} queries of 8 words, k={args.k}\n")  # fmt: skip
    print("| retriever | build s | p50 ms | p95 ms | ACL p50 ms | ACL p95 ms |\n|---|---|---|---|---|---|")
    builds: list[tuple[str, Callable[[], Any], Callable[[], Retriever]]] = [
        ("bm25 (tantivy)", lambda: build_index(passages, tmp / "sbm25"), lambda: TantivyRetriever(tmp / "sbm25")),
        ("dense (random vectors)",
         lambda: build_dense_index(passages[:n_dense], tmp / "sdense", embedder=RandomEmbedder()),
         lambda: DenseRetriever(tmp / "sdense", embedder=RandomEmbedder())),
    ]  # fmt: skip
    for name, build, open_ in builds if n_dense else builds[:1]:
        t = time.perf_counter()
        build()
        build_s = time.perf_counter() - t
        r = open_()
        plain, filtered = measure(r, queries, args.k), measure(r, queries, args.k, filters=acl)
        print(f"| {name} | {build_s:.1f} | {plain['p50_ms']:.2f} | {plain['p95_ms']:.2f} | "
              f"{filtered['p50_ms']:.2f} | {filtered['p95_ms']:.2f} |", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help=f"dataset folder (default: {DEFAULT_DATASET})")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--synthetic", type=int, default=0, help="passages in the synthetic corpus")
    parser.add_argument("--synthetic-dense", type=int, default=100_000, help="cap for the dense index")
    parser.add_argument("--skip-wiki", action="store_true")
    parser.add_argument("--skip-milvus", action="store_true")
    args = parser.parse_args()
    if not args.skip_wiki:
        args.data = dataset_dir(args.data or DEFAULT_DATASET)
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_wiki:
            wiki(args, Path(tmp))
        if args.synthetic:
            synthetic(args, Path(tmp))


if __name__ == "__main__":
    try:
        main()
    except FlareError as err:  # e.g. no dataset: one line with the hint, no traceback
        raise SystemExit(f"error: {err}") from None
