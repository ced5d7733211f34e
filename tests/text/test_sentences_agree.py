"""The generator and the chunker end sentences at the same places (flare.text.sentences).

The generator finds sentence ends one at a time, on the rest of the answer after each committed
sentence, and on text still being generated; the chunker finds all of a document's ends in one
pass with ``lines=False``. Texts are built from the pieces that make boundaries hard
(abbreviations, initials, decimals, closers, Chinese and English marks, newlines) and from
arbitrary characters of the same kinds.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from flare.retrieve.corpus import _sentences
from flare.text import first_sentence_end, sentence_ends, split_sentences

PROPERTY = settings(max_examples=150, deadline=None, database=None)

_PIECES = [
    "Dr", "Mr", "U.S", "e.g", "cf", "etc", "J", "K", "a", "I", "He", "left", "5", "5.5", "IP68", "QL-300",
    "它", "好", "北风", "实验室", "2026年",
    ".", "!", "?", "…", "……", "。", "！", "？", "?!", "；", "，",
    '"', "'", "”", "’", ")", "]", "}", "）", "】", "」", "』", "(", "“", "「",
    " ", " ", " ", "  ", "\t",
]  # fmt: skip
_NEWLINES = ["\n", "\n\n", " \n \n"]
_ALPHABET = "aAJ5 .!?…。！？\"')]}）】」』它好.,"

_flat = st.lists(st.sampled_from(_PIECES), max_size=30).map("".join) | st.text(_ALPHABET, max_size=40)
_lined = st.lists(st.sampled_from(_PIECES + _NEWLINES), max_size=30).map("".join) | st.text(
    _ALPHABET + "\n", max_size=40
)


def _generator_ends(text: str) -> list[int]:
    """Where the engine ends sentences: one fresh look at the rest after each committed one."""
    ends: list[int] = []
    offset = 0
    while text[offset:].strip():
        end = first_sentence_end(text[offset:], final=True)
        assert end is not None and end > 0
        offset += end
        ends.append(len(text[:offset].rstrip()))
    return ends


def _chunker_ends(text: str) -> list[int]:
    return [span.end for span in _sentences(text, max_words=10**9)]  # no sentence cut between words


@PROPERTY
@given(_flat)
def test_generator_and_chunker_end_sentences_at_the_same_places(text: str) -> None:
    assert _generator_ends(text) == _chunker_ends(text)
    assert split_sentences(text) == [p for p in (text[s.start : s.end].strip() for s in _sentences(text, 10**9)) if p]


@PROPERTY
@given(_lined)
def test_every_end_the_chunker_finds_the_generator_finds_too(text: str) -> None:
    """Only a single newline differs: it ends a generated sentence, not a document's."""
    assert set(_chunker_ends(text)) <= set(_generator_ends(text))
    if "\n" not in text.strip():
        assert _generator_ends(text) == _chunker_ends(text)


@PROPERTY
@given(_lined, st.data())
def test_an_end_found_while_generating_stays_an_end_of_the_finished_text(text: str, data: st.DataObject) -> None:
    """A boundary found on a prefix is the finished text's first end, once anything follows it.

    (A Chinese mark at the very end of a partial text ends the sentence at once, so that case
    is left out: a closer generated after it would start the next sentence.)
    """
    cut = data.draw(st.integers(0, len(text)))
    prefix = text[:cut]
    end = first_sentence_end(prefix)
    if end is not None and end < len(prefix):
        assert end == first_sentence_end(text, final=True)
    whole = list(sentence_ends(text))
    partial = list(sentence_ends(prefix, final=False))
    if partial:  # the last one may be an end mark at the very end of the prefix
        assert partial[:-1] == whole[: len(partial) - 1]
        assert partial[-1] == whole[len(partial) - 1] or partial[-1] == len(prefix)
