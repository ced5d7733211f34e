"""FLARE direct vs single-time retrieval on the same questions, index and model.

Prints, per method: wall seconds per answer, LM tokens evaluated (prompt tokens actually
evaluated + generated) per output token, retrievals per answer, share of sentences retrieved and
LM calls per answer — then the FLARE / single ratio of each. Both methods answer a question before
the next, each from a cache holding only the prompt header (as ``flare eval`` times them).
``--shift-cache`` runs single and FLARE with llama.cpp's ``shift_cache`` off and adds a third column,
FLARE on a second copy of the model with it on (the cached question and answer moved past inserted
passages, not evaluated again); without it every method runs with the model's default.

    .venv/bin/python benchmarks/bench_flare_vs_single.py --dataset 2wikimultihopqa --n 10 --model smollm2
    .venv/bin/python benchmarks/bench_flare_vs_single.py --dataset world --n 6 --model qwen1.5b --shift-cache
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from flare.config import Settings
from flare.engine.loop import Flare
from flare.errors import FlareError
from flare.evaluate.datasets import dataset_dir
from flare.lm.base import declared
from flare.lm.registry import resolve_model
from flare.retrieve.corpus import load_corpus
from flare.retrieve.tantivy_index import TantivyRetriever, build_index
from flare.trace.tracers import MemoryTracer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--dataset", default="2wikimultihopqa")
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--offset", type=int, default=100, help="skip the dev slice")
    ap.add_argument("--model", default=None)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--theta", type=float, default=None)
    ap.add_argument("--shift-cache", action="store_true", help="also run FLARE with llama.cpp's shift_cache")
    args = ap.parse_args()

    data = dataset_dir(args.dataset)  # a name under $FLARE_DATA (else ../shared/data) or a folder
    index = Path(".flare/indexes") / data.name
    if not (index / "flare-index.json").exists():
        build_index(load_corpus(data / "corpus.jsonl"), index)
    lines = (data / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(x)["question"] for x in lines[args.offset : args.offset + args.n]]
    # With --shift-cache, single and flare run with it off (whatever the model's default) and
    # flare+shift on its own copy of the model with it on: the option belongs to the model.
    off = {"shift_cache": False} if args.shift_cache else {}
    lms = {"single": resolve_model(args.model, n_threads=args.threads, **off)}
    lms["flare"] = lms["single"]
    if args.shift_cache:
        lms["flare+shift"] = resolve_model(args.model, n_threads=args.threads, shift_cache=True)
    retriever = TantivyRetriever(index)
    base = Settings(max_sentences=6) if args.theta is None else Settings(max_sentences=6, theta=args.theta)
    for lm in lms.values():
        lm.complete("warm up", max_tokens=1)

    methods = tuple(lms)
    tracers = {m: MemoryTracer() for m in methods}
    engines = {m: Flare(lms[m], retriever, base.with_overrides(method=m.split("+")[0]), tracer=tracers[m])
               for m in methods}  # fmt: skip
    seconds: dict[str, list[float]] = {m: [] for m in methods}
    for q in questions:  # every method on a question before the next: the same load for all
        for method, engine in engines.items():
            # Every answer starts with only the prompt header cached, as on a server that has
            # answered other questions: flare must not find single's first prompt cached.
            declared(lms[method]).reset_cache(engine.template_for(engine.settings, q).prefix)
            t0 = time.perf_counter()
            engine.answer(q)
            seconds[method].append(time.perf_counter() - t0)

    rows: dict[str, dict[str, float]] = {}
    for method in methods:
        traces = tracers[method].traces
        out_tokens = sum(t.output_tokens for t in traces)
        sentences = sum(1 for t in traces for s in t.steps if s.sentence)
        retrieved = sum(1 for t in traces for s in t.steps if s.sentence and s.decision == "retrieve")
        rows[method] = {
            "seconds_per_answer": statistics.mean(seconds[method]),
            "lm_tokens_per_output_token": sum(t.lm_tokens_evaluated for t in traces) / max(out_tokens, 1),
            "retrievals_per_answer": sum(t.retrievals for t in traces) / len(traces),
            "share_of_sentences_retrieved": retrieved / max(sentences, 1),
            "lm_calls_per_answer": sum(t.lm_calls for t in traces) / len(traces),
            "sentences_per_answer": sentences / len(traces),
        }
    print(f"{args.dataset}: {len(questions)} questions, model {lms['single'].name}")
    others = methods[1:]
    print(f"{'metric':32} {'single':>10}" + "".join(f" {m:>11} {m + '/single':>18}" for m in others))
    for key in rows["single"]:
        a = rows["single"][key]
        cells = "".join(f" {rows[m][key]:11.3f} {rows[m][key] / a if a else float('nan'):18.2f}" for m in others)
        print(f"{key:32} {a:10.3f}{cells}")


if __name__ == "__main__":
    try:
        main()
    except FlareError as err:  # e.g. no dataset: one line with the hint, no traceback
        raise SystemExit(f"error: {err}") from None
