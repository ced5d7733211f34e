"""Tokens per second of the transformers backend beside llama.cpp's, for the same model file.

Both load the bundled SmolLM2-135M GGUF (transformers dequantizes it to float32; llama.cpp runs
the Q4_1 weights as they are), run on the CPU with the same threads, and answer the same prompts
greedily. For each backend it prints prompt tokens evaluated per second (a fresh prompt, no
cache), generated tokens per second, and how many of the greedy texts are identical to
llama.cpp's; then the ratios. A small run is enough to compare.

Usage::

    FLARE_THREADS=1 .venv/bin/python benchmarks/bench_hf_vs_llama.py [--tokens 48] [--threads 1]
    # on a GPU: --device cuda (transformers only; llama.cpp stays on the CPU)
"""

from __future__ import annotations

import argparse
import time

from flare.lm.base import LanguageModel
from flare.lm.hf import HFModel
from flare.lm.llama import LlamaCppModel, default_model_path

PROMPTS = [
    "Question: Which river flows out of Lake Baikal, and where does it go?\nAnswer:",
    "Write a short poem about the sea:\n",
    "The Quillmere lighthouse was built in 1847 by the engineer Ada Pemberton. Its lamp",
    "中国的首都是北京。上海是中国的",
]


def measure(lm: LanguageModel, tokens: int, reset: object) -> tuple[float, float, list[str]]:
    """(prompt tokens/s, generated tokens/s, texts); each prompt evaluated fresh."""
    prompt_n = prompt_s = gen_n = gen_s = 0.0
    texts = []
    for p in PROMPTS:
        reset_fn = getattr(lm, str(reset), None)
        if callable(reset_fn):
            reset_fn()
        t0 = time.perf_counter()
        lm.complete(p, max_tokens=1)  # prompt evaluation, plus one token
        t1 = time.perf_counter()
        c = lm.complete(p, max_tokens=tokens)  # the prompt is cached now: this is generation
        t2 = time.perf_counter()
        prompt_n += lm.count_tokens(p)
        prompt_s += t1 - t0
        gen_n += c.generated_tokens
        gen_s += t2 - t1
        texts.append(c.text)
    return prompt_n / prompt_s, gen_n / max(gen_s, 1e-9), texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args()
    path = default_model_path()
    rows = []
    llama = LlamaCppModel(path, n_threads=args.threads, n_ctx=2048)
    t = time.perf_counter()
    llama.complete("Hi", max_tokens=1)
    load_llama = time.perf_counter() - t
    base = measure(llama, args.tokens, "reset_cache")
    llama.close()
    rows.append(("llama.cpp (Q4_1, cpu)", load_llama, *base))
    hf = HFModel(path, device=args.device, n_threads=args.threads)
    t = time.perf_counter()
    hf.load()
    load_hf = time.perf_counter() - t
    got = measure(hf, args.tokens, "reset_cache")
    rows.append((f"transformers (float32 from GGUF, {args.device})", load_hf, *got))
    print(f"SmolLM2-135M, {args.threads} thread(s), {len(PROMPTS)} prompts, up to {args.tokens} tokens each")
    print(f"{'backend':<42} {'load s':>7} {'prompt tok/s':>13} {'gen tok/s':>10} {'same text':>10}")
    for name, load, ptps, gtps, texts in rows:
        same = sum(a == b for a, b in zip(texts, base[2], strict=True))
        print(f"{name:<42} {load:>7.1f} {ptps:>13.1f} {gtps:>10.1f} {same:>7}/{len(PROMPTS)}")
    print(f"ratio transformers/llama.cpp: prompt {got[0] / base[0]:.2f}x, generation {got[1] / base[1]:.2f}x")


if __name__ == "__main__":
    main()
