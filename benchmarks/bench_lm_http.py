"""FLARE answer latency: SmolLM2 in-process vs the same model behind a local llama.cpp server.

Starts llama.cpp's own server (``llama-server`` from the xllamacpp wheel, one slot) on a free
port (``tests/lm_http/llama_server.py``), answers the same ``--n`` 2WikiMultihopQA questions
with FLARE direct over the same BM25 index with both backends, and prints seconds per answer
(mean, p50, p95), LM calls per answer, and how many answers are identical: once with each side
reusing its prompt caches (as deployed), once with caches off on both (every prompt evaluated
whole), where any difference left would be the backend's, not rounding. It then times the two
ways the HTTP backend can honour ``stop_when`` (the engine's end-of-sentence stop): one request
for ``max_tokens`` cut afterwards, or SSE streaming closed early.

Usage::

    .venv/bin/python benchmarks/bench_lm_http.py [--n 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from flare.config import Settings
from flare.engine.loop import Flare
from flare.engine.prompts import PromptTemplate
from flare.errors import FlareError
from flare.evaluate.datasets import dataset_dir
from flare.lm.base import LanguageModel, StopWhen
from flare.lm.llama import LlamaCppModel, default_model_path
from flare.lm.openai_http import DEFAULT_EXTRA, OpenAIHTTPModel
from flare.retrieve.corpus import load_corpus
from flare.retrieve.tantivy_index import TantivyRetriever, build_index
from flare.types import Completion

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.lm_http.llama_server import llama_server

DATASET = "2wikimultihopqa"  # looked up under $FLARE_DATA, else ../shared/data


def run(lm: LanguageModel, retriever: TantivyRetriever, questions: list[str]) -> tuple[list[float], list[str], float]:
    # Same ChatML prompts for both: the server tokenizes <|im_start|> as a control token, as the
    # in-process model does with special_tokens=True.
    engine = Flare(
        lm, retriever, Settings(max_sentences=4).with_overrides(method="flare"), template=PromptTemplate.chatml()
    )
    seconds, answers, calls = [], [], 0
    for q in questions:
        t = time.perf_counter()
        answer = engine.answer(q)
        seconds.append(time.perf_counter() - t)
        answers.append(answer.text)
        calls += answer.lm_calls
    return seconds, answers, calls / len(questions)


class WholePrompts(LlamaCppModel):
    """In-process llama.cpp that forgets its prompt caches before each call (as the server with
    ``cache_prompt: false``): reused caches round differently from a whole prompt's evaluation."""

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int,
        stop: Sequence[str] = (),
        stop_when: StopWhen | None = None,
        logit_bias: Mapping[str, float] | None = None,
    ) -> Completion:
        self.reset_cache()
        return super().complete(prompt, max_tokens=max_tokens, stop=stop, stop_when=stop_when, logit_bias=logit_bias)


def line(name: str, seconds: list[float], calls: float) -> str:
    p95 = sorted(seconds)[max(0, round(0.95 * (len(seconds) - 1)))]
    return (f"| {name} | {statistics.fmean(seconds):.2f} | {statistics.median(seconds):.2f} | "
            f"{p95:.2f} | {calls:.1f} |")  # fmt: skip


def stop_when_modes(url: str, prompts: list[str]) -> None:
    def sentence(text: str) -> bool:
        return any(mark in text for mark in ".?!。")

    print("\n| stop_when via | mean s per call | generated tokens |\n|---|---|---|")
    for stream in (False, True):
        with OpenAIHTTPModel(url, stream=stream, timeout=600) as lm:
            lm.complete(prompts[0], max_tokens=1)
            seconds, tokens = [], 0
            for p in prompts:
                t = time.perf_counter()
                c = lm.complete(p, max_tokens=64, stop_when=sentence)
                seconds.append(time.perf_counter() - t)
                tokens += c.generated_tokens
            print(f"| {'SSE stream, closed early' if stream else 'one request, cut after'} | "
                  f"{statistics.fmean(seconds):.2f} | {tokens / len(prompts):.1f} |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--offset", type=int, default=100, help="skip the dev slice")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    data = dataset_dir(DATASET)
    index = Path(".flare/indexes/2wikimultihopqa")
    if not (index / "flare-index.json").exists():
        build_index(load_corpus(data / "corpus.jsonl"), index)
    retriever = TantivyRetriever(index)
    lines = (data / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(x)["question"] for x in lines[args.offset : args.offset + args.n]]
    local = LlamaCppModel(default_model_path(), n_threads=args.threads, special_tokens=True)
    whole = WholePrompts(default_model_path(), n_threads=args.threads, special_tokens=True)
    local.complete("warm up", max_tokens=1)
    uncached_extra = {**DEFAULT_EXTRA, "cache_prompt": False}
    with (
        llama_server(default_model_path(), threads=args.threads) as url,
        OpenAIHTTPModel(url, timeout=600) as http,
        OpenAIHTTPModel(url, timeout=600, extra=uncached_extra) as uncached,
    ):
        http.complete("warm up", max_tokens=1)
        print(f"## FLARE direct, {len(questions)} 2WikiMultihopQA questions, SmolLM2, {args.threads} thread(s)\n")
        print("| LM | prompt caches | mean s/answer | p50 s | p95 s | LM calls/answer | identical answers |")
        print("|---|---|---|---|---|---|---|")
        for caches, in_process, served in (("reused", local, http), ("off: whole prompts", whole, uncached)):
            local_s, local_a, local_calls = run(in_process, retriever, questions)
            http_s, http_a, http_calls = run(served, retriever, questions)
            same = sum(a == b for a, b in zip(local_a, http_a, strict=True))
            print(line(f"in-process llama.cpp | {caches}", local_s, local_calls) + " |")
            print(line(f"llama-server (xllamacpp) over HTTP | {caches}", http_s, http_calls) +
                  f" {same}/{len(questions)} |")  # fmt: skip
            for a, b in zip(local_a, http_a, strict=True):
                if a != b:
                    print(f"<!-- differs:\n  in-process: {a!r}\n  http:       {b!r} -->")
        stop_when_modes(url, [f"Question: {q}\nAnswer:" for q in questions])
    local.close()
    whole.close()


if __name__ == "__main__":
    try:
        main()
    except FlareError as err:  # e.g. no dataset: one line with the hint, no traceback
        raise SystemExit(f"error: {err}") from None
