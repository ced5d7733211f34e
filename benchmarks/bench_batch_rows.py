"""What verifying drafted tokens costs: one llama.cpp decode of n rows against n decodes of one.

Speculative decoding (draft k tokens, verify them in one batch) pays only where a batch of
k + 1 rows costs little more than one row. This measures it for the in-process backend on this
machine: after a cached 260-token prompt, the median time of one decode of n generated rows
(n = 1 … 8, 16, 32; logits at every row, as verification needs, and at the last row only),
each as a multiple of a one-row decode, and the ceiling a draft of n − 1 tokens could reach if
every drafted token were accepted (n / cost(n)). The rows run in random order, so a busy
machine slows every size alike.

    .venv/bin/python benchmarks/bench_batch_rows.py --model qwen1.5b --threads 1
    FLARE_LLAMA_LIB=native .venv/bin/python benchmarks/bench_batch_rows.py --model qwen1.5b

Measured 2026-12-02 (issue 19, `docs/results/speculative.md`): Qwen2.5-1.5B Q4_K_M, 1 thread,
xllamacpp: 2 rows cost 2.3x one row, 4 rows 3.9x, 7 rows 5.9x; the compiled build 2.0x, 3.3x, 5.2x.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence

from flare.lm.llama import LlamaCppModel
from flare.lm.registry import resolve_model

SIZES = (1, 2, 3, 4, 5, 6, 7, 8, 16, 32)
PROMPT = "Search results:\n[1] Greta Porven was born in Morporwick in 1888 and studied glass. " * 12


def timings(lm: LlamaCppModel, sizes: Sequence[int], repeats: int) -> dict[tuple[int, bool], float]:
    """Median seconds of one decode of n rows after the cached prompt, for logits everywhere or last."""
    ctx = lm._new_context()
    ids = lm._tokenize(PROMPT, add_special=False)
    lm._decode(ctx, ids)
    base, rows = len(ctx.tokens), ids[5 : 5 + max(sizes)]
    jobs = [(n, every) for n in sizes for every in (True, False)] * repeats
    random.Random(0).shuffle(jobs)
    seconds: dict[tuple[int, bool], list[float]] = {}
    for n, every in jobs:
        t0 = time.perf_counter()
        if every:
            lm._decode_all(ctx, rows[:n])
        else:
            lm._decode(ctx, rows[:n])
            lm._logits(ctx)
        seconds.setdefault((n, every), []).append(time.perf_counter() - t0)
        lm._truncate(ctx, base)
    return {key: statistics.median(v) for key, v in seconds.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--model", default="qwen1.5b", help="a model spec of the in-process backend")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    lm = resolve_model(args.model, n_threads=args.threads)
    if not isinstance(lm, LlamaCppModel):
        raise SystemExit(f"error: {args.model!r} is not an in-process llama.cpp model")
    t = timings(lm, SIZES, args.repeats)
    one = t[(1, False)]
    print(f"model {args.model}, {args.threads} thread(s); one-row decode {one * 1000:.1f} ms")
    print("rows   logits every row     logits last row    ceiling of a draft of rows-1 tokens")
    for n in SIZES:
        every, last = t[(n, True)], t[(n, False)]
        print(f"{n:4d}  {every * 1000:8.1f} ms {every / one:5.2f}x  {last * 1000:8.1f} ms {last / one:5.2f}x"
              f"    {n * one / every:5.2f}x")


if __name__ == "__main__":
    main()
