"""The xllamacpp backend: llama.cpp's own server in-process, with parallel slots (real SmolLM2)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from flare.errors import ConfigError, ModelError
from flare.lm.base import parallel_calls
from flare.lm.llama import LlamaCppModel
from flare.lm.llama_server import LlamaServerModel
from flare.lm.registry import default_model_path, resolve_model

pytestmark = pytest.mark.model
PROMPTS = ["Question: Who wrote Hamlet?\nAnswer:", "The capital of France is"]


@pytest.fixture(scope="module")
def served() -> Iterator[LlamaServerModel]:
    lm = resolve_model("xllamacpp:smollm2", n_threads=1, max_parallel=2, n_ctx=2048)
    assert isinstance(lm, LlamaServerModel)
    with lm:
        yield lm


@pytest.mark.parametrize("prompt", PROMPTS)
def test_same_text_as_in_process(prompt: str, served: LlamaServerModel, local_lm: LlamaCppModel) -> None:
    # local_lm reads ChatML markers as text; these prompts have none, so both see the same tokens.
    a = served.complete(prompt, max_tokens=12)
    b = local_lm.complete(prompt, max_tokens=12)
    assert a.text == b.text and len(a.tokens) == len(b.tokens)
    # The wheel's AVX2 kernels round differently from a native build: measured up to 0.1.
    assert max(abs(x.logprob - y.logprob) for x, y in zip(a.tokens, b.tokens, strict=True)) < 0.3
    assert served.count_tokens(prompt) == local_lm.count_tokens(prompt)


def test_parallel_calls_give_the_sequential_answers(served: LlamaServerModel) -> None:
    sequential = [served.complete(p, max_tokens=10).text for p in PROMPTS]
    results: dict[int, str] = {}

    def call(i: int) -> None:
        results[i] = served.complete(PROMPTS[i % 2], max_tokens=10).text

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert [results[i] for i in range(4)] == sequential * 2
    assert parallel_calls(served) == 2


def test_a_growing_prompt_reuses_its_prefix(served: LlamaServerModel) -> None:
    base = "Question: Which river flows out of Lake Baikal, and where does it go?\nAnswer: The Angara"
    first = served.complete(base, max_tokens=8, stop_when=lambda t: "." in t)
    grown = served.complete(base + first.text + " It", max_tokens=8, stop_when=lambda t: "." in t)
    assert 0 < grown.prompt_tokens_evaluated < grown.prompt_tokens  # only the new tail was evaluated


def test_stop_when_ends_the_stream(served: LlamaServerModel) -> None:
    c = served.complete(PROMPTS[1], max_tokens=40, stop_when=lambda t: "." in t)
    assert c.finish_reason == "sentence" and c.text.endswith(".") and c.generated_tokens < 40
    assert served.chat_template and "<|im_start|>" in served.chat_template  # the engine picks ChatML


def test_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="model file not found"):
        LlamaServerModel(tmp_path / "missing.gguf").load()
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"not a model")
    with pytest.raises(ModelError, match="not a GGUF"):
        LlamaServerModel(fake).load()
    with pytest.raises(ModelError, match="model file not found"):
        resolve_model("xllamacpp:/nowhere/model.gguf")
    with pytest.raises(ConfigError, match="max_parallel"):
        LlamaServerModel(default_model_path(), max_parallel=0)
    assert resolve_model("smollm2", max_parallel=1).name == "smollm2"
