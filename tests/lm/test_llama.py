"""Tests of the llama.cpp backend.

Unmarked tests need neither llama.cpp nor a model; ``@pytest.mark.model`` tests use the bundled
SmolLM2 (one uses Gemma 3) with short prompts and at most 32 new tokens, so the file stays well
under a minute.
Expected texts are never hard-coded beyond what greedy decoding of a pinned model makes stable:
most tests derive their expectations from an unconstrained run of the same prompt.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from flare.errors import ConfigError, ModelError
from flare.lm import registry
from flare.lm.base import LanguageModel
from flare.lm.llama import (
    _MIN_CHUNK,
    LlamaCppModel,
    cut_at_stop,
    default_model_path,
    gemma3_model_path,
)
from flare.lm.registry import register_model, registered_models, resolve_model
from flare.testing.scripted import ScriptedLM
from flare.types import Completion, TokenLogprob

MakeLlama = Callable[..., LlamaCppModel]  # the conftest fixture's type

HEADER = "Answer the question in one short sentence.\n\n"
QUESTION = "Question: What is the capital of France?\nAnswer:"
SEARCH = "Search results:\n[1] Paris is the capital of France.\n"
LIST = "The list of items:\n"  # SmolLM2 goes on with "- 1000\n- 2000…", one digit per token
STORY = "Once upon a time"  # SmolLM2 goes on with ", the city of Nova Haven was a thriving…"


@pytest.fixture(scope="module")
def story(smollm2: LlamaCppModel) -> Completion:
    """An unconstrained continuation of ``STORY``: the reference for the stop tests."""
    return smollm2.complete(STORY, max_tokens=24)


def joined(c: Completion) -> str:
    return "".join(t.text for t in c.tokens)


def check_invariants(c: Completion) -> None:
    assert joined(c) == c.text
    assert all(0.0 < t.prob <= 1.0 for t in c.tokens)
    assert all(t.text for t in c.tokens)


# -- no model needed ----------------------------------------------------------------------------


def tl(*pieces: str) -> list[TokenLogprob]:
    return [TokenLogprob(p, -float(i)) for i, p in enumerate(pieces, 1)]


def test_cut_at_stop_mid_token_keeps_logprob() -> None:
    tokens = tl("Hello", " wor", "ld\nNext")
    cut = cut_at_stop(tokens, "Hello world\nNext", ["\n"], 9)
    assert cut == ([tokens[0], tokens[1], TokenLogprob("ld", -3.0)], "Hello world")


def test_cut_at_stop_on_boundary_drops_whole_token() -> None:
    tokens = tl("A", ".", "\n")
    assert cut_at_stop(tokens, "A.\n", ["\n"], 2) == (tokens[:2], "A.")


def test_cut_at_stop_straddling_and_earliest() -> None:
    tokens = tl("x", "EN", "D y", " STOP")
    text = "xEND y STOP"
    # "END" straddles the tokens appended before and after the last check.
    assert cut_at_stop(tokens, text, ["STOP", "END"], 3) == (tokens[:1], "x")
    assert cut_at_stop(tokens, text, ["nope", ""], 0) is None


def test_constructor_is_cheap_and_missing_file_fails_on_use(tmp_path: Path) -> None:
    lm = LlamaCppModel(tmp_path / "absent.gguf")  # nothing is opened yet
    assert isinstance(lm, LanguageModel)
    with pytest.raises(ModelError, match="not found") as info:
        lm.complete("hi", max_tokens=1)
    assert "--model" in info.value.hint and "smollm2" in info.value.hint


def test_non_gguf_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "notes.gguf"
    path.write_text("just some text, not a model")
    with pytest.raises(ModelError, match="not a GGUF"):
        LlamaCppModel(path).count_tokens("hi")


def test_settings_are_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError):
        LlamaCppModel("m.gguf", n_contexts=0)
    monkeypatch.setenv("FLARE_THREADS", "3")
    assert LlamaCppModel("m.gguf").n_threads == 3
    assert LlamaCppModel("m.gguf", n_threads=1).n_threads == 1
    monkeypatch.setenv("FLARE_THREADS", "many")
    with pytest.raises(ConfigError, match="FLARE_THREADS"):
        LlamaCppModel("m.gguf")


@pytest.mark.model
def test_default_model_path_points_at_the_bundled_file() -> None:
    path = default_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()


# -- SmolLM2 ------------------------------------------------------------------------------------


@pytest.mark.model
def test_truncated_gguf_is_a_model_error(tmp_path: Path, make_llama: MakeLlama) -> None:
    path = tmp_path / "broken.gguf"
    with default_model_path().open("rb") as f:
        path.write_bytes(f.read(4096))
    with pytest.raises(ModelError, match="could not load"):
        make_llama(path).load()


@pytest.mark.model
def test_greedy_is_deterministic_and_repeat_is_free(smollm2: LlamaCppModel) -> None:
    first = smollm2.complete(HEADER + QUESTION, max_tokens=16)
    again = smollm2.complete(HEADER + QUESTION, max_tokens=16)
    check_invariants(first)
    assert (again.text, again.tokens) == (first.text, first.tokens)
    assert again.prompt_tokens == first.prompt_tokens
    assert again.prompt_tokens_evaluated == 0  # the prompt's logits were kept


@pytest.mark.model
def test_end_of_text_token_ends_with_stop(smollm2: LlamaCppModel) -> None:
    c = smollm2.complete(SEARCH + QUESTION, max_tokens=32)
    check_invariants(c)
    assert c.finish_reason == "stop" and c.generated_tokens < 32
    assert "Paris" in c.text and "<|" not in c.text


@pytest.mark.model
def test_max_tokens_ends_with_length(smollm2: LlamaCppModel) -> None:
    c = smollm2.complete(LIST, max_tokens=5)
    check_invariants(c)
    assert (c.finish_reason, c.generated_tokens) == ("length", 5)
    assert smollm2.complete(LIST, max_tokens=0).text == ""


@pytest.mark.model
def test_stop_sequences_are_trimmed_from_text_and_tokens(smollm2: LlamaCppModel, story: Completion) -> None:
    # A stop string that starts inside a word token and ends in a later token.
    starts = [sum(len(t.text) for t in story.tokens[:i]) for i in range(len(story.tokens))]
    i = next(i for i in range(1, len(starts) - 1) if len(story.tokens[i].text) >= 4)
    at = starts[i] + 2
    stop = story.text[at : starts[i + 1] + 2]
    assert story.text.find(stop) == at
    c = smollm2.complete(STORY, max_tokens=24, stop=["zzz", stop])
    check_invariants(c)
    assert c.finish_reason == "stop" and c.text == story.text[:at]
    assert c.tokens[:-1] == story.tokens[:i]
    assert c.tokens[-1] == TokenLogprob(story.tokens[i].text[:2], story.tokens[i].logprob)


@pytest.mark.model
def test_stop_when_ends_with_sentence(smollm2: LlamaCppModel, story: Completion) -> None:
    seen: list[str] = []

    def long_enough(text: str) -> bool:
        seen.append(text)
        return len(text) > 20

    c = smollm2.complete(STORY, max_tokens=24, stop_when=long_enough)
    check_invariants(c)
    assert c.finish_reason == "sentence" and c.tokens == story.tokens[: len(c.tokens)]
    assert seen == ["".join(t.text for t in c.tokens[:n]) for n in range(1, len(c.tokens) + 1)]
    assert len(seen[-2]) <= 20 < len(c.text)


def flare_prompts(answer: str) -> tuple[str, str]:
    """A draft prompt and a regeneration prompt (with documents) for one answer prefix."""
    return HEADER + QUESTION + answer, HEADER + SEARCH + QUESTION + answer


def sentence_end(text: str) -> bool:
    return text.rstrip().endswith((".", "\n"))


@pytest.mark.model
def test_reuse_gives_bit_identical_results_to_a_cold_model(make_llama: MakeLlama) -> None:
    warm = make_llama(n_ctx=1024)
    cold = make_llama(n_ctx=1024, n_contexts=1)
    answer = ""
    for _ in range(3):  # draft, regenerate, commit the regenerated sentence, repeat
        for prompt in flare_prompts(answer):
            reused = warm.complete(prompt, max_tokens=12, stop_when=sentence_end)
            cold.reset_cache()
            fresh = cold.complete(prompt, max_tokens=12, stop_when=sentence_end)
            assert fresh.prompt_tokens_evaluated == fresh.prompt_tokens
            assert (reused.text, reused.tokens) == (fresh.text, fresh.tokens)
        answer += reused.text
    assert answer.startswith(" Paris")  # later prompts carried a generated answer
    assert warm.stats.prompt_tokens_evaluated < cold.stats.prompt_tokens_evaluated / 2


@pytest.mark.model
def test_reset_cache_keeps_only_the_shared_header(make_llama: MakeLlama) -> None:
    lm = make_llama(n_ctx=1024)
    draft, regen = flare_prompts(" Paris.")
    for prompt in (draft, regen):
        lm.complete(prompt, max_tokens=4)
    again = lm.complete(regen, max_tokens=4)
    assert again.prompt_tokens_evaluated == 0  # the same prompt again: nothing to evaluate

    lm.reset_cache(HEADER)
    after = lm.complete(regen, max_tokens=4)
    # Everything after the header is evaluated anew (the last header token may be too, where
    # the header alone tokenizes differently at its end); the result is the same.
    header = lm.count_tokens(HEADER)
    assert after.prompt_tokens - header <= after.prompt_tokens_evaluated <= after.prompt_tokens - header + 2
    assert (after.text, after.tokens) == (again.text, again.tokens)

    # A model that has not evaluated the header yet, in any context, evaluates it there now.
    fresh = make_llama(n_ctx=1024)
    fresh.reset_cache(HEADER)
    first, second = (fresh.complete(p, max_tokens=4) for p in flare_prompts(" Paris."))
    assert first.prompt_tokens_evaluated <= first.prompt_tokens - header + 2
    assert second.prompt_tokens_evaluated <= second.prompt_tokens - header + 2
    assert (second.text, second.tokens) == (again.text, again.tokens)

    lm.reset_cache()
    assert lm.complete(regen, max_tokens=4).prompt_tokens_evaluated == after.prompt_tokens


@pytest.mark.model
def test_a_rewrite_goes_to_the_context_holding_the_documents_not_the_bare_header(make_llama: MakeLlama) -> None:
    lm = make_llama(n_ctx=1024)
    lm.reset_cache(HEADER)  # both contexts hold the header, and each "extends" every prompt
    docs = "Search results:\n" + "".join(f"[{i}] Paris is the capital of France, on the Seine.\n" for i in (1, 2, 3))
    lm.complete(HEADER + docs + QUESTION, max_tokens=4)  # the draft
    rewrite = lm.complete(HEADER + docs + "[4] The Louvre is in Paris.\n" + QUESTION, max_tokens=4)
    # Only the new passage and the question are evaluated, in the draft's context.
    assert rewrite.prompt_tokens_evaluated <= lm.count_tokens("[4] The Louvre is in Paris.\n" + QUESTION) + 2


@pytest.mark.model
def test_accepted_text_is_evaluated_again_in_one_batch(make_llama: MakeLlama) -> None:
    lm = make_llama(n_contexts=1)
    first = lm.complete(STORY, max_tokens=12)
    again = lm.complete(STORY + first.text, max_tokens=2)
    # Generated tokens were evaluated one by one, which rounds differently: they are re-run.
    assert 8 <= again.prompt_tokens_evaluated <= first.generated_tokens + 2


@pytest.mark.model
@pytest.mark.parametrize("n_contexts", [1, 2])
def test_two_contexts_keep_draft_and_regeneration_prefixes(n_contexts: int, make_llama: MakeLlama) -> None:
    lm = make_llama(n_ctx=1024, n_contexts=n_contexts)
    evaluated = []
    for answer in ["", " Paris.", " Paris. It is big."]:
        draft, regen = flare_prompts(answer)
        evaluated.append(lm.complete(draft, max_tokens=2).prompt_tokens_evaluated)
        evaluated.append(lm.complete(regen, max_tokens=2).prompt_tokens_evaluated)
    later_drafts = evaluated[2::2]
    if n_contexts == 2:
        # Each draft only evaluates the sentence appended since the previous draft (at least
        # 8 tokens, the smallest batch that rounds like a cold evaluation).
        assert all(n <= max(8, lm.count_tokens(" It is big.") + 1) for n in later_drafts)
    else:
        # One context: every draft re-evaluates the question after the shared header.
        assert all(n >= lm.count_tokens(QUESTION) for n in later_drafts)


@pytest.mark.model
def test_chinese_byte_tokens_are_grouped_into_characters(smollm2: LlamaCppModel) -> None:
    c = smollm2.complete("北京是", max_tokens=24)
    check_invariants(c)
    assert c.generated_tokens > len(c.tokens)  # some pieces merged several byte tokens
    cjk = [t.text for t in c.tokens if len(t.text) == 1 and "\u4e00" <= t.text <= "\u9fff"]
    assert any(smollm2.count_tokens(ch) >= 2 for ch in cjk)  # a character SmolLM2 splits


@pytest.mark.model
def test_logit_bias_raises_and_forbids_brackets(smollm2: LlamaCppModel) -> None:
    plain = smollm2.complete(HEADER + QUESTION, max_tokens=8)
    pushed = smollm2.complete(HEADER + QUESTION, max_tokens=8, logit_bias={"[": 10.0})
    check_invariants(pushed)
    assert "[" not in plain.text and "[" in pushed.text
    cites = "Sources: [1] Smith 2010. [2] Jones 2012. [3]"
    assert "[" in smollm2.complete(cites, max_tokens=12).text
    banned = smollm2.complete(cites, max_tokens=12, logit_bias={"[": -math.inf})
    check_invariants(banned)
    assert "[" not in banned.text
    with pytest.raises(ConfigError):
        smollm2.complete(cites, max_tokens=1, logit_bias={"": 1.0})


@pytest.mark.model
def test_context_window_limits(make_llama: MakeLlama) -> None:
    lm = make_llama(n_ctx=32, n_contexts=1)
    with pytest.raises(ModelError, match="context window") as info:
        lm.complete("word " * 40, max_tokens=4)
    assert "n_ctx" in info.value.hint
    c = lm.complete(LIST, max_tokens=32)
    assert c.finish_reason == "length"
    assert c.prompt_tokens + c.generated_tokens == 33  # the last token is never evaluated


@pytest.mark.model
def test_tokens_template_and_stats(smollm2: LlamaCppModel) -> None:
    assert smollm2.count_tokens(" hello world") == 2
    assert "<|im_start|>" in (smollm2.chat_template or "")
    before = smollm2.stats.calls
    smollm2.complete("Hi", max_tokens=1)
    assert smollm2.stats.calls == before + 1 and smollm2.stats.generated_tokens > 0


@pytest.mark.model
def test_gemma_keeps_leading_spaces_and_groups_chinese(make_llama: MakeLlama) -> None:
    lm = make_llama(gemma3_model_path(), n_ctx=512, n_contexts=1)
    en = lm.complete(QUESTION, max_tokens=4)
    check_invariants(en)
    assert en.text.startswith(" Paris")
    zh = lm.complete("问题：中国的首都是哪里？\n回答：", max_tokens=8)
    check_invariants(zh)
    assert "北京" in zh.text or "中国" in zh.text


# -- model specs --------------------------------------------------------------------------------


@pytest.mark.model
def test_resolve_model_specs(tmp_path: Path) -> None:
    lm = resolve_model("smollm2", n_ctx=256)
    assert isinstance(lm, LlamaCppModel) and lm.name == "smollm2" and lm.n_ctx == 256
    assert resolve_model(None).name == "qwen1.5b"  # the default; constructing it loads nothing
    assert resolve_model("smollm2").model_path == default_model_path()  # type: ignore[attr-defined]
    by_path = resolve_model(str(default_model_path()))
    assert isinstance(by_path, LlamaCppModel) and by_path.model_path == default_model_path()
    with pytest.raises(ModelError, match="not found") as missing:
        resolve_model(str(tmp_path / "nope.gguf"))
    assert "--model" in missing.value.hint
    with pytest.raises(ModelError, match="unknown model") as unknown:
        resolve_model("gpt-17")
    assert "gemma3" in unknown.value.hint and "smollm2" in unknown.value.hint


def test_backends_register_a_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_FACTORIES", dict(registry._FACTORIES))
    seen: list[str] = []

    def fake(rest: str, **options: object) -> ScriptedLM:
        seen.append(rest)
        return ScriptedLM(name=f"fake:{rest}")

    register_model("fake", fake)
    assert resolve_model("fake:http://host:8000/v1#m").name == "fake:http://host:8000/v1#m"
    assert seen == ["http://host:8000/v1#m"] and "fake" in registered_models()
    with pytest.raises(ConfigError, match="already registered"):
        register_model("fake", fake)
    with pytest.raises(ConfigError):
        register_model("bad:prefix", fake)


@pytest.mark.model
def test_score_gives_the_logprobs_of_a_given_continuation(smollm2: LlamaCppModel, story: Completion) -> None:
    said = story
    scored = smollm2.score(STORY, said.text)
    assert scored.text == said.text and "".join(t.text for t in scored.tokens) == said.text
    assert scored.generated_tokens == 0
    # Teacher forcing the greedy text gives its own log-probabilities (one batch instead of one
    # token at a time rounds a little differently).
    for a, b in zip(said.tokens, scored.tokens, strict=True):
        assert a.text == b.text and b.logprob == pytest.approx(a.logprob, abs=0.3)
    # Scored again, the prompt is a cached prefix: only the continuation is evaluated.
    again = smollm2.score(STORY, said.text)
    assert again.tokens == scored.tokens
    assert again.prompt_tokens_evaluated <= again.prompt_tokens - smollm2.count_tokens(STORY)
    # Text the model would not write is far less likely than its own words.
    odd = smollm2.score(STORY, " Zebras dance quietly.")
    assert sum(t.logprob for t in odd.tokens) < sum(t.logprob for t in scored.tokens) - 5
    with pytest.raises(ModelError, match="empty"):
        smollm2.score("", "text")
    assert smollm2.score(STORY, "").tokens == ()


# -- shift_cache: the cached text after an insertion is moved, not evaluated again ----------------

PASSAGE = "[2] The Louvre, the largest art museum in the world, is in Paris on the right bank of the Seine.\n"
LONG_QUESTION = ("Question: What is the capital of France, which river runs through it, and which large "
                 "museum stands on its right bank?\nAnswer:")  # fmt: skip


def test_insertion_finds_the_cached_run_after_inserted_tokens() -> None:
    from flare.lm.llama import _insertion

    tail = list(range(100, 130))
    assert _insertion([1, 2, *tail], [1, 2, 7, 8, *tail, 9], 2) == (2, 30)
    # The run stops one token short of the prompt's end, whose logits are needed.
    assert _insertion([1, 2, *tail], [1, 2, 7, *tail], 2) == (1, 29)
    # Only the start of the cached run is repeated (the answer grew): that much is kept.
    assert _insertion([1, 2, *tail], [1, 2, 7, *tail[:20], 5, 5], 2) == (1, 20)
    # A run shorter than 16 tokens, or none at all, is evaluated again.
    assert _insertion([1, 2, *tail[:15]], [1, 2, 7, *tail[:15], 9], 2) is None
    assert _insertion([1, 2, *tail], [1, 2, 7, 8, 9, *range(200, 240)], 2) is None
    assert _insertion([1, 2, *tail], [1, 2, *tail[1:], 9], 2) is None  # a deletion is not an insertion


@pytest.mark.model
def test_shift_cache_evaluates_only_the_inserted_passage(make_llama: MakeLlama) -> None:
    lm = make_llama(n_ctx=1024, n_contexts=1, shift_cache=True)
    draft = HEADER + SEARCH + LONG_QUESTION
    rewrite = HEADER + SEARCH + PASSAGE + LONG_QUESTION
    lm.complete(draft, max_tokens=8)
    shifted = lm.complete(rewrite, max_tokens=8)
    # The passage and the prompt's last token are evaluated; the question is moved.
    assert shifted.prompt_tokens_evaluated <= lm.count_tokens(PASSAGE) + 2
    assert lm.stats.prompt_tokens_shifted >= lm.count_tokens(LONG_QUESTION) - 3
    cold = make_llama(n_ctx=1024, n_contexts=1)
    full = cold.complete(rewrite, max_tokens=8)
    assert full.prompt_tokens_evaluated == full.prompt_tokens > shifted.prompt_tokens_evaluated + 20
    # Without shifting, the same two calls evaluate the question again.
    plain = make_llama(n_ctx=1024, n_contexts=1)
    plain.complete(draft, max_tokens=8)
    assert plain.complete(rewrite, max_tokens=8).prompt_tokens_evaluated >= lm.count_tokens(PASSAGE + LONG_QUESTION)


@pytest.mark.model
def test_shifted_insertion_sees_only_the_text_before_it(make_llama: MakeLlama) -> None:
    """The inserted tokens are computed as in a cold evaluation of the text up to them.

    After the shifted call, a prompt ending with the passage reads the passage's cached cells.
    They match a cold model's up to rounding (llama.cpp's kernels round differently when other
    cells share the cache, ~0.05 per token here); a passage that missed the prefix before it,
    or saw the moved question, would be far off.
    """
    lm = make_llama(n_ctx=1024, n_contexts=1, shift_cache=True)
    lm.complete(HEADER + SEARCH + LONG_QUESTION, max_tokens=4)
    lm.complete(HEADER + SEARCH + PASSAGE + LONG_QUESTION, max_tokens=4)
    assert lm.stats.prompt_tokens_shifted > 0
    upto = HEADER + SEARCH + PASSAGE
    cold = make_llama(n_ctx=1024, n_contexts=1)
    text = cold.complete(upto, max_tokens=12).text
    warm, fresh = lm.score(upto, text), cold.score(upto, text)
    assert warm.prompt_tokens_evaluated < lm.count_tokens(upto) / 2  # it read the cached passage
    gaps = [abs(a.logprob - b.logprob) for a, b in zip(warm.tokens, fresh.tokens, strict=True)]
    assert sum(gaps) / len(gaps) < 0.1, gaps


@pytest.mark.model
def test_a_draft_after_a_shifted_rewrite_goes_on_from_the_draft_before_it(make_llama: MakeLlama) -> None:
    """Draft, rewrite with a passage inserted, then the next draft without it (FLARE's order).

    The next draft undoes the insertion (its cache holds the question and answer as the first
    draft left them, computed without the passage), so only the new sentence is evaluated;
    and it reads as a cold model's reading of the same prompt, up to rounding.
    """
    lm = make_llama(n_ctx=1024, n_contexts=1, shift_cache=True)
    draft = HEADER + SEARCH + LONG_QUESTION
    lm.complete(draft, max_tokens=4)
    lm.complete(HEADER + SEARCH + PASSAGE + LONG_QUESTION, max_tokens=4)
    sentence = " Paris is the capital of France, and the Seine runs through it."
    cold = make_llama(n_ctx=1024, n_contexts=1)
    text = " The Louvre is on its right bank."
    warm, fresh = lm.score(draft + sentence, text), cold.score(draft + sentence, text)
    assert warm.prompt_tokens_evaluated <= lm.count_tokens(sentence) + _MIN_CHUNK + len(fresh.tokens) + 2
    gaps = [abs(a.logprob - b.logprob) for a, b in zip(warm.tokens, fresh.tokens, strict=True)]
    assert sum(gaps) / len(gaps) < 0.1, gaps
