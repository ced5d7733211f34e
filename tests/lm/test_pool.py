"""ModelPool: copies of the in-process model serve concurrent calls with unchanged results."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from flare.errors import ConfigError
from flare.lm.base import parallel_calls
from flare.lm.llama import LlamaCppModel
from flare.lm.pool import ModelPool
from flare.lm.registry import resolve_model

MakeLlama = Callable[..., LlamaCppModel]

PROMPTS = [
    "Question: Who wrote Hamlet?\nAnswer:",
    "Question: What is the capital of Norway?\nAnswer:",
    "The longest river in Europe is",
    "Question: How many legs does a spider have?\nAnswer:",
]


@pytest.mark.model
def test_concurrent_calls_give_the_single_model_results(make_llama: MakeLlama) -> None:
    single = make_llama(n_ctx=1024)
    expected = [single.complete(p, max_tokens=10) for p in PROMPTS]
    copies: list[LlamaCppModel] = []

    def make() -> LlamaCppModel:
        copies.append(make_llama(n_ctx=1024))
        return copies[-1]

    pool = ModelPool(make, size=2)
    pool.load()
    results: dict[int, object] = {}

    def call(i: int) -> None:
        results[i] = pool.complete(PROMPTS[i % 4], max_tokens=10)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    for i in range(8):
        got, want = results[i], expected[i % 4]
        assert got.text == want.text and got.tokens == want.tokens  # type: ignore[attr-defined]
    assert all(c.stats.calls > 0 for c in copies), "one copy did all the work"
    assert pool.supports_scoring
    assert pool.score(PROMPTS[0], " William").tokens == single.score(PROMPTS[0], " William").tokens
    assert parallel_calls(pool) == 2 and pool.name == single.name


@pytest.mark.model
def test_a_growing_prompt_goes_to_the_copy_that_has_its_prefix(make_llama: MakeLlama) -> None:
    pool = ModelPool(lambda: make_llama(n_ctx=1024), size=2)
    header = "Answer each question in one short sentence, using only well-known facts.\n" * 4
    first = pool.complete(header + PROMPTS[0], max_tokens=6)
    pool.complete(header + PROMPTS[1], max_tokens=6)  # the other copy is now the one idle longest
    grown = pool.complete(header + PROMPTS[0] + first.text + " He", max_tokens=6)
    assert grown.prompt_tokens > 60
    assert grown.prompt_tokens_evaluated <= 16  # the new tail (at least 8: one batch), not the prompt


@pytest.mark.model
def test_reset_cache_leaves_every_copy_holding_the_header(make_llama: MakeLlama) -> None:
    pool = ModelPool(lambda: make_llama(n_ctx=1024, n_contexts=1), size=2)
    header = "Answer each question in one short sentence, using only well-known facts.\n" * 4
    pool.complete(header + PROMPTS[0], max_tokens=6)
    pool.reset_cache(header)
    for prompt in (PROMPTS[1], PROMPTS[2]):  # the copy idle longest, then the other: both hold the header
        c = pool.complete(header + prompt, max_tokens=2)
        assert c.prompt_tokens_evaluated <= pool.count_tokens(prompt) + 2


def test_size_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="at least one copy"):
        ModelPool(lambda: resolve_model("smollm2"), size=0)


def test_max_parallel_makes_a_pool_of_the_in_process_model() -> None:
    pool = resolve_model("smollm2", max_parallel=3, n_threads=1)
    assert isinstance(pool, ModelPool) and len(pool.copies) == 3 and pool.name == "smollm2"
    assert all(isinstance(c, LlamaCppModel) and c.special_tokens for c in pool.copies)
    assert isinstance(resolve_model("smollm2", max_parallel=1), LlamaCppModel)
