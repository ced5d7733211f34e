"""BM25 analyzer speed: ordinary text vs long unbroken runs (identifier detection must stay linear).

The identifier pass of the ``en-zh-2`` analyzer once retried every start inside a run of letters,
so a 20,000-letter run took ~23 s; it must grow linearly with the text. Prints milliseconds per
text and the ratio of 10x longer texts (about 10 when linear, about 100 when quadratic).

Usage: ``python benchmarks/bench_analyzer.py``
"""

from __future__ import annotations

import time
from collections.abc import Callable

from flare.retrieve.analyzers import analyze

CASES: dict[str, Callable[[int], str]] = {
    "letters run": lambda n: "x" * n,
    "Han run": lambda n: "中" * n,
    "joined code": lambda n: "QL-" * (n // 3) + "1",
    "policy text": lambda n: ("文件编号：差旅-2026-03。审批通过后5个工作日内付款，FX-200 售价38,000元。" * n)[:n],
}


def ms(text: str, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        analyze(text)
        best = min(best, time.perf_counter() - t0)
    return best * 1000


def main() -> None:
    print(f"{'case':<14}{'10k chars ms':>14}{'100k chars ms':>15}{'ratio':>8}")
    for name, make in CASES.items():
        small, big = ms(make(10_000)), ms(make(100_000))
        print(f"{name:<14}{small:>14.1f}{big:>15.1f}{big / small:>8.1f}")


if __name__ == "__main__":
    main()
