"""Tests of the scripted fake model that engine tests build on."""

from __future__ import annotations

import math

import pytest

from flare.lm.base import LanguageModel
from flare.testing.scripted import ScriptedLM, ScriptError


def test_split_keeps_leading_spaces_and_joins_back() -> None:
    assert ScriptedLM.split("The capital is Paris.") == ["The", " capital", " is", " Paris", "."]
    assert ScriptedLM.split("巴黎是首都。") == ["巴", "黎", "是", "首", "都", "。"]
    for text in ["", "  two  spaces ", "U.S. 5.5%\n\nnext", "混合 text 和 中文！"]:
        assert "".join(ScriptedLM.split(text)) == text


def test_sentence_assigns_low_probabilities() -> None:
    response = ScriptedLM.sentence(" The capital is Paris.", low={"Paris": 0.1}, default_prob=0.9)
    assert response == [(" The", 0.9), (" capital", 0.9), (" is", 0.9), (" Paris", 0.1), (".", 0.9)]
    with pytest.raises(ValueError, match="Lyon"):
        ScriptedLM.sentence("Paris.", low={"Lyon": 0.1})


def test_first_matching_rule_wins_and_calls_are_recorded() -> None:
    lm = ScriptedLM(
        [
            ("Search results", ScriptedLM.sentence(" Paris.")),
            (lambda p: p.endswith("Answer:"), ScriptedLM.sentence(" Lyon.", low={"Lyon": 0.2})),
        ]
    )
    assert isinstance(lm, LanguageModel)
    draft = lm.complete("Q?\nAnswer:", max_tokens=8)
    assert draft.text == " Lyon." and draft.finish_reason == "stop"
    assert [round(t.prob, 6) for t in draft.tokens] == [0.2, 0.95]
    regen = lm.complete("Search results: ...\nQ?\nAnswer:", max_tokens=8)
    assert regen.text == " Paris."
    assert lm.calls == ["Q?\nAnswer:", "Search results: ...\nQ?\nAnswer:"]
    assert lm.requests[0].completion is draft and lm.requests[1].max_tokens == 8


def test_unmatched_prompt_raises_with_its_tail() -> None:
    lm = ScriptedLM([("never", [("x", 1.0)])], name="fake")
    with pytest.raises(ScriptError, match=r"fake: no rule matches call #1") as info:
        lm.complete("a long prompt ending in QUESTION?", max_tokens=4)
    assert isinstance(info.value, AssertionError)
    assert "QUESTION?" in str(info.value)


def test_stop_sequence_is_cut_mid_token() -> None:
    lm = ScriptedLM([("", [("One", 0.5), (" two.\nThree", 0.25), (" four", 0.9)])])
    c = lm.complete("p", max_tokens=10, stop=["\n"])
    assert c.text == "One two." and c.finish_reason == "stop"
    assert [(t.text, t.prob) for t in c.tokens] == [("One", 0.5), (" two.", 0.25)]


def test_stop_when_is_checked_after_every_token() -> None:
    lm = ScriptedLM([("", ScriptedLM.sentence("First one. Second one."))])
    seen: list[str] = []

    def ends_sentence(text: str) -> bool:
        seen.append(text)
        return text.endswith(".")

    c = lm.complete("p", max_tokens=10, stop_when=ends_sentence)
    assert c.text == "First one." and c.finish_reason == "sentence"
    assert seen == ["First", "First one", "First one."]


def test_max_tokens_and_end_of_script() -> None:
    lm = ScriptedLM([("", ScriptedLM.sentence("a b c"))])
    assert lm.complete("p", max_tokens=2).text == "a b"
    assert lm.complete("p", max_tokens=2).finish_reason == "length"
    assert lm.complete("p", max_tokens=3).finish_reason == "stop"  # the script ended
    c = lm.complete("p", max_tokens=3, logit_bias={"[": 2.0})
    assert lm.requests[-1].logit_bias == {"[": 2.0} and c.generated_tokens == 3


def test_capabilities_are_configurable() -> None:
    lm = ScriptedLM([("", [("hi", 0.5)])], supports_logprobs=False, supports_logit_bias=False)
    assert not lm.supports_logprobs and not lm.supports_logit_bias
    c = lm.complete("p", max_tokens=4)
    assert c.text == "hi" and c.tokens == ()


def test_probabilities_are_validated_and_tokens_counted() -> None:
    with pytest.raises(ValueError, match="probability"):
        ScriptedLM([("", [("x", 0.0)])])
    lm = ScriptedLM().add("", [("x", 1.0)])
    assert lm.complete("The capital is", max_tokens=1).prompt_tokens == 3
    assert lm.count_tokens("巴黎 is") == 3
    assert lm.complete("p", max_tokens=1).tokens[0].logprob == math.log(1.0)


def test_logit_bias_of_100_forces_or_bans_a_piece_smaller_ones_change_nothing() -> None:
    lm = ScriptedLM([("", ScriptedLM.sentence("Go [Search] now[x"))])
    plain = lm.complete("p", max_tokens=20)
    for small in (2.0, -99.0):
        same = lm.complete("p", max_tokens=20, logit_bias={"[": small})
        assert (same.text, same.tokens) == (plain.text, plain.tokens)
    forced = lm.complete("p", max_tokens=3, logit_bias={"[": 100.0})
    assert forced.text == "[[[" and [t.prob for t in forced.tokens] == [1.0, 1.0, 1.0]
    banned = lm.complete("p", max_tokens=20, logit_bias={"[": -100.0})  # with or without a space
    assert banned.text == "GoSearch] nowx" and banned.finish_reason == "stop"
    spaced = lm.complete("p", max_tokens=20, logit_bias={" [": -100.0})  # as llama.cpp: " [" only
    assert spaced.text == "GoSearch] now[x"
