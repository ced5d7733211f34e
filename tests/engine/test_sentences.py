"""Sentence splitting on English, Chinese, numbers, abbreviations and partial text."""

from __future__ import annotations

import pytest

from flare.text import ends_sentence, first_sentence_end, language_of, split_sentences


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("He was 5.5 ft tall. She was not.", ["He was 5.5 ft tall.", "She was not."]),
        ("He moved to the U.S. in 1999. Then he left.", ["He moved to the U.S. in 1999.", "Then he left."]),
        ("Dr. Smith and Mr. Jones met. They talked.", ["Dr. Smith and Mr. Jones met.", "They talked."]),
        ("J. K. Rowling wrote it. Fine.", ["J. K. Rowling wrote it.", "Fine."]),
        ("Really?! Yes.", ["Really?!", "Yes."]),
        ('He said "stop." Then left.', ['He said "stop."', "Then left."]),
        ("他来了。她走了！你呢？", ["他来了。", "她走了！", "你呢？"]),
        ("浮冰传感器每小时发送一次数据。It lasts 3 years.", ["浮冰传感器每小时发送一次数据。", "It lasts 3 years."]),
        ("First line\nSecond line", ["First line", "Second line"]),
        ("No ending", ["No ending"]),
        ("", []),
    ],
)
def test_split_sentences(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


def test_partial_text_waits_for_what_follows_a_period() -> None:
    assert first_sentence_end("The answer is 5.") is None  # may become 5.5
    assert first_sentence_end("The answer is 5.5") is None
    assert first_sentence_end("The answer is 5. Next") == len("The answer is 5.")
    assert first_sentence_end("The answer is 5.", final=True) == len("The answer is 5.")
    assert ends_sentence("好。")
    assert not ends_sentence("  ")


def test_language_of() -> None:
    assert language_of("北风实验室的差旅费用多久报销？") == "zh"
    assert language_of("How long does it take?") != "zh"
    assert language_of("1234") != "zh"
