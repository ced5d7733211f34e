"""The language rules of flare.text: the choices made where the old splitters disagreed, and the
two content-word rules (segmented and per character)."""

from __future__ import annotations

import pytest

import flare.text
from flare.retrieve.corpus import chunk
from flare.text import char_content_words, content_words, first_sentence_end, split_sentences
from flare.types import Passage


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("See cf. the manual. Next.", ["See cf. the manual.", "Next."]),  # "cf" came from the chunker
        ("He said 【stop.】 Then left.", ["He said 【stop.】", "Then left."]),  # "】" came from the chunker
        ("Set {done.} Then go.", ["Set {done.}", "Then go."]),  # "}" came from the generator
        ("真的？！好。", ["真的？！", "好。"]),  # a run of marks ends one sentence
        ("等等……然后呢。", ["等等……", "然后呢。"]),
        ("他说：“好。”她走了。", ["他说：“好。”", "她走了。"]),
        ("好!Yes.", ["好!", "Yes."]),  # "!" after a Chinese character ends at once
        ("It has IP68.它防水。", ["It has IP68.", "它防水。"]),
        ("Pick option b. Then go.", ["Pick option b. Then go."]),  # a single letter: an initial
        ("Call me at 5 p.m. Then go.", ["Call me at 5 p.m. Then go."]),  # known abbreviation: no end
        ("Wait… what? Yes.", ["Wait…", "what?", "Yes."]),
        ("line one\nline two", ["line one", "line two"]),
    ],
)
def test_sentence_rules(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


def test_a_period_at_the_end_of_partial_text_is_not_yet_an_end_but_a_chinese_mark_is() -> None:
    assert first_sentence_end("He is 5.") is None
    assert first_sentence_end("He is 5.", final=True) == 8
    assert first_sentence_end("他五岁。") == 4
    assert first_sentence_end("Dr. ") is None  # an abbreviation waits for more


def test_a_wrapped_line_does_not_end_a_document_sentence_but_a_blank_line_does() -> None:
    text = "The sensor measures sea\nice from above. " * 3 + "\n\nSecond paragraph here."
    parts = chunk(Passage("d", text), max_words=8)
    assert all(not p.text.endswith("sea") for p in parts)  # never cut at the wrapped line
    assert parts[-1].text == "Second paragraph here."


def test_content_words_are_segmented_and_char_content_words_are_per_character() -> None:
    assert char_content_words("北风实验室的传感器") == {"北", "风", "实", "验", "室", "传", "感", "器"}
    segmented = content_words("北风实验室的传感器")
    assert "传感器" in segmented and "的" not in segmented
    assert char_content_words("The FX-200 lasts 2026年") == {"fx", "200", "lasts", "2026", "年"}
    assert content_words("The FX-200 lasts") == {"fx-200", "lasts"}


def test_every_public_name_is_importable_from_flare_text() -> None:
    for name in flare.text.__all__:
        assert getattr(flare.text, name) is not None, name
    assert callable(flare.text.numbers) and callable(flare.text.words)  # functions, not submodules
