"""Seconds per answer of each bundled model on the demo's questions, side by side in one run.

The embedded default should be the model that answers best within about 15 s per answer (p50)
on this machine. This runs `flare demo`'s questions (the bundled handbook, default settings, the
"staff" group) with each model, alternating models question by question so that a busy machine
slows all of them alike, and prints per model: load seconds, p50 / max seconds per answer, LM
calls, how many of the first question's three facts the answer states, and the ratio of each
model's p50 to the first model's.

    .venv/bin/python benchmarks/demo_latency.py --models qwen1.5b,qwen0.5b,gemma3 --threads 1
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from importlib.resources import files
from pathlib import Path

from flare.config import Settings
from flare.engine.loop import Flare
from flare.lm.registry import resolve_model
from flare.retrieve.corpus import load_corpus
from flare.retrieve.filters import Filters
from flare.retrieve.tantivy_index import TantivyRetriever, build_index

EXAMPLES = files("flare") / "data" / "examples"
# The three facts the demo's first question asks for (founder, chief executive, what Floe measures).
FIRST_FACTS = ("Ingrid Solberg", "Tomas Berg", "ice thickness")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="qwen1.5b,qwen0.5b,gemma3")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=1, help="times each question is asked per model")
    args = ap.parse_args()
    specs = [m.strip() for m in args.models.split(",") if m.strip()]
    questions = [q.strip() for q in (EXAMPLES / "questions.txt").read_text(encoding="utf-8").splitlines() if q.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "index"
        build_index(load_corpus(Path(str(EXAMPLES / "handbook.jsonl"))), index, progress=False)
        engines: dict[str, Flare] = {}
        loads: dict[str, float] = {}
        for spec in specs:
            t0 = time.perf_counter()
            lm = resolve_model(spec, n_threads=args.threads)
            getattr(lm, "load", lambda: None)()
            loads[spec] = time.perf_counter() - t0
            engines[spec] = Flare(lm, TantivyRetriever(index), Settings())
        seconds: dict[str, list[float]] = {s: [] for s in specs}
        calls: dict[str, list[int]] = {s: [] for s in specs}
        facts: dict[str, int] = {}
        for _ in range(args.rounds):
            for i, q in enumerate(questions):
                for spec in specs:  # alternate: the same load on every model
                    t0 = time.perf_counter()
                    answer = engines[spec].answer(q, filters=Filters.any_of("acl", ["staff"]))
                    seconds[spec].append(time.perf_counter() - t0)
                    calls[spec].append(answer.lm_calls)
                    if i == 0:
                        facts[spec] = sum(f.lower() in answer.text.lower() for f in FIRST_FACTS)
                    print(f"  {spec:10s} {seconds[spec][-1]:6.1f} s  {answer.text[:90]!r}", flush=True)
    base = statistics.median(seconds[specs[0]])
    head = ("model", "load s", "p50 s", "max s", "calls", "facts Q1", "p50 ratio")
    print("\n" + " ".join(f"{h:>{w}s}" for h, w in zip(head, (10, 7, 7, 7, 6, 9, 10), strict=True)))
    for spec in specs:
        p50 = statistics.median(seconds[spec])
        print(f"{spec:10s} {loads[spec]:7.1f} {p50:7.1f} {max(seconds[spec]):7.1f} "
              f"{statistics.mean(calls[spec]):6.2f} {facts.get(spec, 0):>6d}/3 {p50 / base:10.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
