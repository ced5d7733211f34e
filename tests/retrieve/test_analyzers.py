"""The en-zh analyzer: the same tokens for documents and queries, in both languages."""

from __future__ import annotations

import pytest

from flare.retrieve.analyzers import MAX_TOKEN_CHARS, STOPWORDS_EN, analyze


def test_english_is_lowercased_and_split_on_non_word_characters() -> None:
    assert analyze("Hello, World! FLARE-style retrieval (v2)") == [
        "hello",
        "world",
        "flare",
        "style",
        "retrieval",
        "v2",
    ]


def test_small_stopword_list_is_dropped_but_content_words_stay() -> None:
    assert analyze("The history of the Roman Empire") == ["history", "roman", "empire"]
    assert len(STOPWORDS_EN) < 40


def test_term_frequency_is_kept() -> None:
    assert analyze("lava lava lava") == ["lava", "lava", "lava"]


def test_full_width_and_accented_text_is_normalised() -> None:
    assert analyze("ＦＬＡＲＥ Café") == ["flare", "café"]


def test_chinese_is_segmented_with_sub_words_for_search() -> None:
    tokens = analyze("北京大学")
    assert {"北京", "大学", "北京大学"} <= set(tokens)


def test_chinese_particles_and_punctuation_are_dropped() -> None:
    tokens = analyze("我的书，好吗？")
    assert "的" not in tokens and "吗" not in tokens
    assert "，" not in tokens and "？" not in tokens


def test_mixed_english_and_chinese_keep_their_order() -> None:
    assert analyze("FLARE 在2023年提出了主动检索") == [
        "flare",
        "在",
        "2023",
        "年",
        "提出",
        "主动",
        "检索",
    ]


@pytest.mark.parametrize("text", ["", "   ", "🎉🍰", "!!! ... ???", "the of and", "，。！"])
def test_text_without_content_words_gives_no_tokens(text: str) -> None:
    assert analyze(text) == []


def test_query_syntax_characters_are_plain_separators() -> None:
    assert analyze('title:foo AND (bar* OR "baz") -x +y ~2 ^3') == [
        "title",
        "foo",
        "bar",
        "baz",
        "x",
        "y",
        "2",
        "3",
    ]


def test_underscore_and_emoji_separate_tokens() -> None:
    assert analyze("snake_case🎉party") == ["snake", "case", "party"]


def test_overlong_tokens_are_dropped() -> None:
    blob = "x" * (MAX_TOKEN_CHARS + 1)
    assert analyze(f"keep {blob} word") == ["keep", "word"]


def test_other_scripts_are_words() -> None:
    assert analyze("Привет мир こんにちは") == ["привет", "мир", "こんにちは"]


@pytest.mark.parametrize(
    ("text", "whole"),
    [
        ("the FX-200 sensor", "fx-200"),
        ("GB/T 7714-2015 规定", "gb/t"),
        ("GB/T 7714-2015 规定", "7714-2015"),
        ("按照差旅-2026-03，", "差旅-2026-03"),
        ("文件编号：采购-2026-01。", "采购-2026-01"),
        ("firmware v3.2 is out", "v3.2"),
        ("整机重2.4公斤", "2.4"),
        ("on 2026-03-15", "2026-03-15"),
        ("COVID-19", "covid-19"),
    ],
)
def test_identifiers_are_kept_whole_and_their_parts_too(text: str, whole: str) -> None:
    tokens = analyze(text)
    assert whole in tokens
    parts = [p for p in whole.replace("/", "-").replace(".", "-").split("-") if p not in STOPWORDS_EN]
    assert all(p in tokens for p in parts if p)


@pytest.mark.parametrize("text", ["FLARE-style retrieval", "e.g. this", "state-of-the-art", "Wi-Fi"])
def test_hyphenated_words_are_not_identifiers(text: str) -> None:
    assert not any(any(c in t for c in "-/.") for t in analyze(text))


def test_grouped_thousands_are_one_number() -> None:
    assert analyze("售价38,000元") == analyze("售价38000元") == ["售价", "38000", "元"]
    assert analyze("1,642 metres") == ["1642", "metres"]


def test_a_long_unbroken_run_is_one_token_or_none() -> None:
    # The identifier pass must not retry every start inside a run (it once took ~23 s for 20,000
    # letters); the speed itself is measured by benchmarks/bench_analyzer.py.
    assert analyze("x" * 20_000) == []  # longer than MAX_TOKEN_CHARS: dropped
    assert analyze("QL-" * 20 + "1") == ["ql-" * 20 + "1", *["ql"] * 20, "1"]
