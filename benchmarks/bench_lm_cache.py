"""Measure what prefix reuse saves the llama.cpp backend in a simulated FLARE loop.

Each question is answered in four steps. Every step drafts the next sentence from
``header + question + answer so far``; every other step (``--every``) also regenerates it from
``header + search results + question + answer so far`` with fresh documents, as FLARE does when
a draft holds a low-probability token. The model's draft (or regenerated sentence) is committed,
as in FLARE, so an accepted draft is followed by a prompt that extends it. Modes:

* ``no reuse``  — the cache is cleared before every call (every prompt evaluated in full);
* ``1 context`` — one KV cache: draft and regeneration prompts evict each other;
* ``2 contexts`` — the default: drafts and regenerations keep their own cached prefix;
* ``2 ctx+shift`` — ``shift_cache=True``: a regeneration, whose search results come before the
  question, moves the cached question and answer instead of evaluating them again (its outputs
  may differ from ``no reuse``: the moved text did not see the search results).

It prints prompt tokens evaluated, generated tokens and wall seconds side by side, with ratios
to ``no reuse``, and counts how many outputs are identical to the ``no reuse`` run (reuse must not change them).

Usage::

    .venv/bin/python benchmarks/bench_lm_cache.py [--model smollm2] [--threads 1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

from flare.lm.llama import LlamaCppModel, LlamaStats
from flare.lm.registry import resolve_model

HEADER = (
    "Answer the question in a few short sentences, using only facts from the search results.\n\n"
    "Search results:\n[1] Lake Baikal is a rift lake in Siberia. With a maximum depth of 1,642 "
    "metres it is the deepest lake in the world.\n[2] The Angara is the only river that flows "
    "out of Lake Baikal.\nQuestion: How deep is Lake Baikal, and which river drains it?\n"
    "Answer: Lake Baikal is 1,642 metres deep. The Angara is the only river that flows out of "
    "it.\n\n"
)

# (question, four committed sentences, documents for steps 1 and 3)
QUESTIONS: list[tuple[str, list[str], list[str]]] = [
    (
        "Who designed the Eiffel Tower and when was it built?",
        [
            " The tower was designed by the company of Gustave Eiffel.",
            " It was built from 1887.",
            " It opened in 1889 for the World's Fair.",
            " It is 330 metres tall.",
        ],
        [
            "The Eiffel Tower was built from 1887 to 1889 by Gustave Eiffel's company.",
            "At 330 metres, the tower was the tallest man-made structure for 41 years.",
        ],
    ),
    (
        "What is the longest river in Africa?",
        [
            " The Nile is the longest river in Africa.",
            " It flows north into the Mediterranean.",
            " Its length is about 6,650 kilometres.",
            " It passes through eleven countries.",
        ],
        [
            "The Nile flows north through eleven countries to the Mediterranean Sea.",
            "With a length of about 6,650 km, the Nile is the longest river in Africa.",
        ],
    ),
    (
        "When did Marie Curie win her Nobel Prizes?",
        [
            " Marie Curie won the Nobel Prize in Physics in 1903.",
            " She shared it with Pierre.",
            " She won the Nobel Prize in Chemistry in 1911.",
            " She was the first to win two.",
        ],
        [
            "The 1903 Nobel Prize in Physics went to Marie Curie, Pierre Curie and Becquerel.",
            "Curie received the 1911 Nobel Prize in Chemistry for discovering polonium and radium.",
        ],
    ),
    (
        "What is the capital of Australia?",
        [
            " The capital of Australia is Canberra.",
            " It was chosen as a compromise.",
            " Sydney and Melbourne both wanted the role.",
            " Parliament moved there in 1927.",
        ],
        [
            "Canberra was selected as the capital in 1908 as a compromise between rival cities.",
            "The federal parliament first met in Canberra in 1927.",
        ],
    ),
    (
        "Which planet has the most moons?",
        [
            " Saturn has the most known moons.",
            " Its largest moon is Titan.",
            " Titan has a thick atmosphere.",
            " Jupiter has the second most moons.",
        ],
        [
            "Saturn has the most confirmed moons of any planet in the Solar System.",
            "Titan, Saturn's largest moon, is the only moon with a dense atmosphere.",
        ],
    ),
]
MODES: list[tuple[str, int, bool, bool]] = [  # label, contexts, reuse, shift_cache
    ("no reuse", 1, False, False), ("1 context", 1, True, False), ("2 contexts", 2, True, False),
    ("2 ctx+shift", 2, True, True),
]  # fmt: skip


def ends_sentence(text: str) -> bool:
    """Stop a draft at the end of its first sentence (requirement M7 allows stopping early)."""
    return any(mark in text.strip() for mark in ".!?\n")


def run(lm: LlamaCppModel, reuse: bool, max_tokens: int, every: int) -> tuple[float, list[str]]:
    """Play every question through ``lm``; returns wall seconds and all generated texts."""
    outputs: list[str] = []

    def call(prompt: str) -> str:
        if not reuse:
            lm.reset_cache()
        text = lm.complete(prompt, max_tokens=max_tokens, stop_when=ends_sentence).text
        outputs.append(text)
        return text

    start = time.perf_counter()
    for question, sentences, docs in QUESTIONS:
        answer = ""
        for step, fallback in enumerate(sentences):
            sentence = call(f"{HEADER}Question: {question}\nAnswer:{answer}")
            if step % every == every - 1:
                search = f"Search results:\n[1] {docs[(step // every) % len(docs)]}\n"
                sentence = call(f"{HEADER}{search}Question: {question}\nAnswer:{answer}")
            # Commit what the model said, as FLARE does; a sentence that is empty or only
            # starts a new line is replaced by the scripted one so that the answer grows.
            answer += sentence if sentence.strip() and sentence[0] == " " else fallback
    return time.perf_counter() - start, outputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2", help="model spec (see flare.lm.registry)")
    parser.add_argument("--threads", type=int, default=None, help="default: $FLARE_THREADS/CPUs")
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=1, help="runs per mode; the fastest is kept")
    parser.add_argument("--every", type=int, default=2, help="regenerate every N sentences (1: always)")
    args = parser.parse_args()

    rows: list[tuple[str, int, int, int, int, float, str]] = []
    reference: list[str] | None = None
    for label, n_contexts, reuse, shift in MODES:
        lm = resolve_model(args.model, n_contexts=n_contexts, n_threads=args.threads, shift_cache=shift)
        assert isinstance(lm, LlamaCppModel), "this benchmark measures the llama.cpp backend"
        lm.load()
        lm.complete("Warm up.", max_tokens=1)  # first-decode setup is not what we measure
        timings = []
        for _ in range(args.repeat):
            lm.reset_cache()
            lm.stats = LlamaStats()
            seconds, outputs = run(lm, reuse, args.max_tokens, args.every)
            timings.append(seconds)
        seconds = min(timings)  # the machine may be shared: the fastest run is the least disturbed
        reference = reference or outputs
        same = sum(a == b for a, b in zip(outputs, reference, strict=True))
        rows.append(
            (
                label,
                lm.stats.calls,
                lm.stats.prompt_tokens,
                lm.stats.prompt_tokens_evaluated,
                lm.stats.generated_tokens,
                seconds,
                f"{same}/{len(outputs)}",
            )
        )
        lm.close()

    base_eval, base_seconds = rows[0][3], rows[0][5]
    print(f"model={args.model} questions={len(QUESTIONS)} every={args.every} threads={args.threads or 'default'}")
    print(
        f"{'mode':<11}{'calls':>6}{'prompt':>8}{'evaluated':>10}{'generated':>10}"
        f"{'seconds':>9}{'eval×':>7}{'time×':>7}  same drafts"
    )
    for label, calls, prompt, evaluated, generated, seconds, agree in rows:
        print(
            f"{label:<11}{calls:>6}{prompt:>8}{evaluated:>10}{generated:>10}{seconds:>9.2f}"
            f"{evaluated / base_eval:>7.2f}{seconds / base_seconds:>7.2f}  {agree}"
        )


if __name__ == "__main__":
    main()
