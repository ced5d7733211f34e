"""A short check of the transformers backend on a CUDA GPU (only where one exists; nothing
depends on it). Exits non-zero when a check fails, with one line per check either way.

Checks: the model loads on ``cuda``; greedy output repeats; a prompt evaluated after its cached
prefix (and after a rejected draft was cropped away) gives the text that fresh evaluation gives;
``score`` reads back about the probabilities generation had; then tokens/s for generation.

Usage::

    python benchmarks/gpu_check_hf.py                       # the bundled SmolLM2 GGUF (needs gguf, accelerate)
    python benchmarks/gpu_check_hf.py --model /models/qwen2.5-0.5b-instruct --dtype bfloat16
"""

from __future__ import annotations

import argparse
import math
import sys
import time

PROMPT = "Question: Which river flows out of Lake Baikal, and where does it go?\nAnswer:"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2", help="hf: spec rest: smollm2, a directory or a .gguf file")
    parser.add_argument("--dtype", default="float32", help="float32 (comparable with the CPU), bfloat16, float16")
    parser.add_argument("--tokens", type=int, default=64)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: nothing to check")
        return 2
    from flare.lm.hf import HFModel

    failures = 0

    def check(name: str, ok: bool, detail: str = "") -> None:
        nonlocal failures
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}")

    lm = HFModel(args.model, device="cuda", dtype=args.dtype)
    t = time.perf_counter()
    lm.load()
    check("loads on cuda", lm.device == "cuda", f"({time.perf_counter() - t:.1f} s, {torch.cuda.get_device_name()})")
    a = lm.complete(PROMPT, max_tokens=24)
    b = lm.complete(PROMPT, max_tokens=24)
    check("greedy repeats", a.text == b.text, repr(a.text[:60]))
    draft = lm.complete(PROMPT + " The Angara", max_tokens=12)  # a draft, then another in its place
    other = lm.complete(PROMPT + " The Yenisei", max_tokens=12)
    lm.reset_cache()
    fresh = lm.complete(PROMPT + " The Yenisei", max_tokens=12)
    check("cropped cache = fresh", other.text == fresh.text and other.prompt_tokens_evaluated < other.prompt_tokens,
          f"(evaluated {other.prompt_tokens_evaluated} of {other.prompt_tokens}; draft {draft.text[:30]!r})")
    if a.text:
        s = lm.score(PROMPT, a.text)
        diff = abs(sum(t.logprob for t in s.tokens) - sum(t.logprob for t in a.tokens))
        check("score ≈ generation", s.text == a.text and diff < 0.05 * max(1, len(a.tokens)), f"(|Δ| {diff:.4f})")
    lm.reset_cache()
    torch.cuda.synchronize()
    t = time.perf_counter()
    c = lm.complete(PROMPT, max_tokens=args.tokens)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t
    print(f"generation: {c.generated_tokens} tokens in {seconds:.2f} s = {c.generated_tokens / seconds:.1f} tok/s "
          f"({args.dtype}, batch 1, no cached prompt)")
    lm.close()
    return 1 if failures or math.isnan(seconds) else 0


if __name__ == "__main__":
    sys.exit(main())
