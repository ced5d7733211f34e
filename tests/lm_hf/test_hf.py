"""The transformers backend on the CPU: a tiny random Llama built here (the contract, cache reuse
and scoring against fresh evaluation), and the bundled SmolLM2 loaded from its GGUF file."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from flare.errors import ConfigError, ModelError
from flare.lm.base import LanguageModel, parallel_calls
from flare.lm.hf import HFModel
from flare.lm.registry import resolve_model
from flare.testing.contracts import LanguageModelContract
from tests.lm_hf.tiny import build_tiny_model

PROMPT = "Question: What is the capital of France?\nAnswer:"


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def tiny(tiny_dir: Path) -> Iterator[HFModel]:
    with HFModel(tiny_dir, device="cpu", n_threads=1) as lm:
        yield lm


class TestTinyHFContract(LanguageModelContract):
    logprob_tolerance = 1e-4  # a prompt evaluated after its cached prefix rounds a little differently
    @pytest.fixture(scope="class")
    @classmethod
    def lm(cls, tiny: HFModel) -> LanguageModel:
        return tiny


def _close(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, abs_tol=1e-4) for x, y in zip(a, b, strict=True))


def test_cached_prefixes_give_what_fresh_evaluation_gives(tiny: HFModel, tiny_dir: Path) -> None:
    first = tiny.complete(PROMPT, max_tokens=8)
    draft = tiny.complete(PROMPT + first.text, max_tokens=6)  # extends: only the new text evaluated
    assert draft.prompt_tokens_evaluated < draft.prompt_tokens
    other = PROMPT + " Paris"  # a rejected draft: the cache is cropped back to the shared prompt
    again = tiny.complete(other, max_tokens=6)
    assert again.prompt_tokens_evaluated < again.prompt_tokens
    with HFModel(tiny_dir, device="cpu", n_threads=1) as fresh:
        for prompt, got in ((PROMPT + first.text, draft), (other, again)):
            want = fresh.complete(prompt, max_tokens=6)
            fresh.reset_cache()  # every prompt evaluated from nothing
            assert got.text == want.text and want.prompt_tokens_evaluated == want.prompt_tokens
            assert _close([t.logprob for t in got.tokens], [t.logprob for t in want.tokens])


def test_score_matches_a_plain_forward_pass(tiny: HFModel, tiny_dir: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cont = " Paris is the capital of France. 中国的首都"
    tok = AutoTokenizer.from_pretrained(tiny_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_dir, dtype=torch.float32)
    head, ids = tok(PROMPT)["input_ids"], tok(PROMPT + cont)["input_ids"]
    with torch.inference_mode():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), dim=-1)
    want = sum(float(logp[j - 1, ids[j]]) for j in range(len(head), len(ids)))
    tiny.reset_cache()
    cold = tiny.score(PROMPT, cont)
    tiny.complete(PROMPT + " Paris", max_tokens=4)  # a cache that shares the prompt
    warm = tiny.score(PROMPT, cont)
    for s in (cold, warm):
        assert s.text == cont and "".join(t.text for t in s.tokens) == cont and s.generated_tokens == 0
        assert math.isclose(sum(t.logprob for t in s.tokens), want, abs_tol=1e-3)
    assert warm.prompt_tokens_evaluated < cold.prompt_tokens_evaluated
    assert tiny.score(PROMPT, "").tokens == ()
    assert tiny.supports_scoring and parallel_calls(tiny) == 1


def test_chat_template_and_errors(tiny: HFModel, tmp_path: Path) -> None:
    assert "<|im_start|>" in (tiny.chat_template or "")  # the engine writes ChatML prompts for it
    with pytest.raises(ModelError, match="could not load") as info:
        HFModel(tmp_path / "nothing-here", device="cpu").load()
    assert info.value.hint and "never downloads" in info.value.hint
    with pytest.raises(ModelError, match="model file not found"):
        resolve_model(f"hf:{tmp_path / 'missing.gguf'}").count_tokens("x")
    with pytest.raises(ConfigError, match="unknown hf option"):
        resolve_model("hf:x;colour=red")
    with pytest.raises(ConfigError, match="unknown device"):
        resolve_model("hf:x;device=tpu")
    with pytest.raises(ConfigError, match="names no model"):
        resolve_model("hf:")
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(ModelError, match="no CUDA device"):
            resolve_model(f"hf:{tmp_path};device=cuda").count_tokens("x")


@pytest.mark.model
class TestSmolLM2OnTransformersContract(LanguageModelContract):
    """The bundled SmolLM2 GGUF, dequantized by transformers: real text through the contract."""

    logprob_tolerance = 1e-4

    @pytest.fixture(scope="class")
    @classmethod
    def lm(cls) -> Iterator[LanguageModel]:
        pytest.importorskip("gguf")
        lm = resolve_model("hf:smollm2;device=cpu", n_threads=1)
        assert isinstance(lm, HFModel)
        with lm:
            yield lm


@pytest.mark.model
def test_flare_ask_on_transformers(tmp_path: Path) -> None:
    pytest.importorskip("gguf")
    from tests.cli.test_cli_real import CORPUS

    corpus = tmp_path / "quillmere.jsonl"
    corpus.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in CORPUS), encoding="utf-8")
    env = {**os.environ, "FLARE_THREADS": "1"}
    run = [sys.executable, "-m", "flare"]
    made = subprocess.run([*run, "index", str(corpus), "--index", str(tmp_path / "idx"), "--quiet"],
                          capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
    assert made.returncode == 0, made.stderr
    out = subprocess.run(
        [*run, "ask", "When was the Quillmere lighthouse built, and by whom?", "--index", str(tmp_path / "idx"),
         "--filter", "acl=public", "--model", "hf:smollm2;device=cpu", "--max-sentences", "2", "--json", "-v"],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert "1847" in answer["answer"] and answer["sentences"][0]["citations"]
    assert answer["sources"][0]["id"] == "lh-1"
    assert "token logprobs yes, scoring yes" in out.stderr
