"""The two llama.cpp builds of the in-process backend side by side: speed and identical answers.

``xllamacpp`` is the binary wheel flare depends on (driven through ctypes, ``flare.lm.capi``);
``native`` is a locally compiled llama-cpp-python (the ``native`` extra). Each build runs in its
own subprocess (``FLARE_LLAMA_LIB``), rounds alternating between them so a busy machine slows
both alike, and the best round counts. Per model it prints prompt-evaluation and generation
tokens per second, whether the greedy text of a fixed prompt is identical, and the largest
difference in log-probability over its tokens.

The native build is looked for in ``--native-python`` (default ``$FLARE_NATIVE_PYTHON``, else this
interpreter); without llama-cpp-python there its column says so and is skipped.

Usage::

    .venv/bin/python benchmarks/bench_llama_libs.py [--models smollm2 gemma3 qwen1.5b] [--threads 1]
        [--native-python /path/to/venv-with-llama-cpp-python/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from importlib.resources import files
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXED_PROMPT = "Question: Who wrote the novel War and Peace, and when was it published?\nAnswer:"
GEN_PROMPT = "Numbers: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,"  # goes on for as long as asked
BUILDS = ("xllamacpp", "native")


def prompt_text(tokens: int) -> str:
    """About ``tokens`` tokens of the bundled handbook, as a retrieval prompt would hold."""
    handbook = Path(str(files("flare") / "data" / "examples" / "handbook.jsonl"))
    docs = [json.loads(line)["text"] for line in handbook.read_text(encoding="utf-8").splitlines()]
    text = "\n\n".join(docs)
    while len(text) < tokens * 6:
        text += "\n\n" + text
    return text


def worker(model: str, threads: int, prompt_tokens: int, gen_tokens: int, repeats: int) -> dict[str, Any]:
    """One build's figures for ``model`` (run in a subprocess with ``FLARE_LLAMA_LIB`` set)."""
    from flare.lm.bundled import BUNDLED, assemble
    from flare.lm.llama import LlamaCppModel, open_llama_library
    from flare.lm.registry import default_model_path, gemma3_model_path

    if model in BUNDLED:
        path = assemble(BUNDLED[model])
    else:
        path = {"smollm2": default_model_path, "gemma3": gemma3_model_path}.get(model, lambda: Path(model))()
    t = time.perf_counter()
    lm = LlamaCppModel(path, n_threads=threads, n_ctx=4096, n_contexts=1)
    lm.load()
    load_s = time.perf_counter() - t
    long_text = prompt_text(prompt_tokens)
    cut = long_text
    for _ in range(3):  # about prompt_tokens tokens
        cut = cut[: int(len(cut) * prompt_tokens / lm.count_tokens(cut))]
    prefill, generation = 0.0, 0.0
    for _ in range(repeats):
        lm.reset_cache()
        c = lm.complete(cut, max_tokens=1)  # the one token needs no evaluation: all prefill
        prefill = max(prefill, c.prompt_tokens_evaluated / c.seconds)
        lm.reset_cache()
        first = lm.complete(GEN_PROMPT, max_tokens=1).seconds
        lm.reset_cache()
        g = lm.complete(GEN_PROMPT, max_tokens=gen_tokens)
        if g.generated_tokens > 1:
            generation = max(generation, (g.generated_tokens - 1) / (g.seconds - first))
    lm.reset_cache()
    fixed = lm.complete(FIXED_PROMPT, max_tokens=48)
    api = open_llama_library()  # the one LlamaCppModel opened ($FLARE_LLAMA_LIB)
    library = getattr(api, "library", None) or getattr(api, "__file__", "?")
    lm.close()
    return {
        "prompt_tokens": c.prompt_tokens_evaluated,
        "prompt_tps": prefill,
        "gen_tokens": g.generated_tokens,
        "gen_tps": generation,
        "load_s": load_s,
        "text": fixed.text,
        "tokens": [[t.text, t.logprob] for t in fixed.tokens],
        "library": str(library),
    }


def has_native(python: str) -> bool:
    probe = subprocess.run([python, "-c", "import llama_cpp"], capture_output=True, timeout=120)
    return probe.returncode == 0


def run_worker(python: str, build: str, model: str, args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ, "FLARE_LLAMA_LIB": build, "PYTHONPATH": str(ROOT / "src")}
    cmd = [python, __file__, "--worker", model, "--threads", str(args.threads), "--prompt-tokens",
           str(args.prompt_tokens), "--gen-tokens", str(args.gen_tokens), "--repeats", str(args.repeats)]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"error: the {build} worker failed on {model}: {out.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def compare(a: dict[str, Any], b: dict[str, Any]) -> tuple[bool, float, int]:
    """Identical greedy text; max |Δ logprob| over the tokens both have in common; their count."""
    n = 0
    for (ta, _), (tb, _) in zip(a["tokens"], b["tokens"], strict=False):
        if ta != tb:
            break
        n += 1
    delta = max((abs(x[1] - y[1]) for x, y in zip(a["tokens"][:n], b["tokens"][:n], strict=True)), default=0.0)
    return a["text"] == b["text"], delta, n


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    models = "smollm2, gemma3, qwen0.5b, qwen1.5b or .gguf paths"
    ap.add_argument("--models", nargs="+", default=["smollm2", "gemma3", "qwen1.5b"], help=models)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--prompt-tokens", type=int, default=400)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=2, help="measurements per round")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds of the two builds")
    ap.add_argument("--native-python", default=os.environ.get("FLARE_NATIVE_PYTHON") or sys.executable)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        figures = worker(args.worker, args.threads, args.prompt_tokens, args.gen_tokens, args.repeats)
        print(json.dumps(figures))
        return
    pythons = {"xllamacpp": sys.executable, "native": args.native_python}
    builds = [b for b in BUILDS if b != "native" or has_native(args.native_python)]
    if "native" not in builds:
        print(f"native: llama-cpp-python is not installed for {args.native_python} "
              "(pip install 'flare-rag[native]' compiles it, 10-20 min); its column is skipped\n")  # fmt: skip
    print(f"## In-process llama.cpp builds, {args.threads} thread(s), best of {args.rounds}x{args.repeats}\n")
    print("| model | build | prompt tok/s | gen tok/s | load s | identical greedy text | max abs Δ logprob |")
    print("|---|---|---|---|---|---|---|")
    for model in args.models:
        best: dict[str, dict[str, Any]] = {}
        for _ in range(args.rounds):
            for build in builds:
                r = run_worker(pythons[build], build, model, args)
                kept = best.setdefault(build, r)
                for key in ("prompt_tps", "gen_tps"):
                    kept[key] = max(kept[key], r[key])
                kept["load_s"] = min(kept["load_s"], r["load_s"])
                if (r["text"], r["tokens"]) != (kept["text"], kept["tokens"]):
                    print(f"<!-- {build} on {model}: greedy output changed between rounds -->")
        name = Path(model).stem if model.endswith(".gguf") else model
        base = best["xllamacpp"]
        for build, r in best.items():
            if build == "xllamacpp":
                same, delta = "(reference)", ""
            else:
                identical, d, n = compare(base, r)
                same, delta = ("yes" if identical else f"no (first {n} tokens equal)"), f"{d:.2e}"
            print(f"| {name} | {build} | {r['prompt_tps']:.1f} | {r['gen_tps']:.1f} | {r['load_s']:.2f} | "
                  f"{same} | {delta} |")  # fmt: skip
        if "native" in best:
            ratio_p = best["native"]["prompt_tps"] / base["prompt_tps"]
            ratio_g = best["native"]["gen_tps"] / base["gen_tps"]
            print(f"| {name} | native / xllamacpp | {ratio_p:.2f}x | {ratio_g:.2f}x | | | |")
        for build, r in best.items():
            print(f"<!-- {name} {build}: {r['library']} -->")
    print(f"\nprompt: {base['prompt_tokens']} tokens (handbook text); generation: {base['gen_tokens']} tokens; "
          f"greedy text: {FIXED_PROMPT!r}, 48 tokens")  # fmt: skip


if __name__ == "__main__":
    main()
