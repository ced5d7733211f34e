"""The incremental checks asked after every token answer exactly as the whole-text functions.

:class:`~flare.text.SentenceWatch` and :class:`~flare.text.RepeatWatch` read only what was
added since the call before; fed a text piece by piece (and sometimes a text that does not
extend the last one, as a retried stream does) they must agree with :func:`ends_sentence` and
:func:`repeated_ngram` on every prefix.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from flare.text import RepeatWatch, SentenceWatch, ends_sentence, repeated_ngram

# Pieces that exercise the rules: marks and runs of them, closers, abbreviations and initials,
# decimals, joiners, Han text (jieba), wide marks, blank lines and spaces.
PIECES = [
    " ", "  ", "\n", "\n\n", " \n", ".", "!", "?", "…", "。", "！", "？", "\"", "”", ")", "】", "」",
    "Dr", "e.g", "U.S", "J", "b", "5", "5.5", "1999", "p.m", "Mr.", "the", "The", "village", "of",
    "Vessa", "in", "FX", "-", "200", "/", "'", "’", "O", "Brien", "IP68", "它", "防水", "他来了",
    "城市", "每晚", "不", "超过", "好", "，", "；", "a", "A", ",", "\t",
]  # fmt: skip
texts = st.lists(st.sampled_from(PIECES), max_size=40)
splits = st.lists(st.integers(min_value=0, max_value=3), max_size=40)


def prefixes(pieces: list[str], steps: list[int]) -> list[str]:
    """Growing prefixes of the joined pieces: one piece at a time, or a few (``steps``) at once."""
    out, text, k = [], "", 0
    for i, piece in enumerate(pieces):
        text += piece
        if k < len(steps) and steps[k] == 0:  # a token of several pieces: no call in between
            k += 1
            if i < len(pieces) - 1:
                continue
        k += 1
        out.append(text)
    return out


@settings(max_examples=400, deadline=None)
@given(texts, splits)
def test_sentence_watch_equals_whole_text_scan(pieces: list[str], steps: list[int]) -> None:
    watch = SentenceWatch()
    for text in prefixes(pieces, steps):
        assert watch(text) == ends_sentence(text), text


@settings(max_examples=400, deadline=None)
@given(texts, splits, st.integers(min_value=0, max_value=5))
def test_repeat_watch_equals_whole_text_scan(pieces: list[str], steps: list[int], n: int) -> None:
    watch = RepeatWatch(n)
    for text in prefixes(pieces, steps):
        assert watch(text) == (repeated_ngram(text, n) is not None), (text, n)


@settings(max_examples=200, deadline=None)
@given(texts, texts, st.integers(min_value=1, max_value=4))
def test_watches_start_again_on_a_text_that_does_not_extend(first: list[str], second: list[str], n: int) -> None:
    """A stream sent again (the backend retries a cut one) starts from its beginning."""
    ended, repeated = SentenceWatch(), RepeatWatch(n)
    for text in [*prefixes(first, []), *prefixes(second, [])]:
        assert ended(text) == ends_sentence(text), text
        assert repeated(text) == (repeated_ngram(text, n) is not None), text


def test_sentence_watch_cases() -> None:
    watch = SentenceWatch()
    assert [watch(t) for t in ("He was 5", "He was 5.", "He was 5.5", "He was 5.5 ft.", "He was 5.5 ft. N")] == [
        False, False, False, False, True]  # fmt: skip
    assert watch("Dr.") is False  # not an extension: scanned again from the start
    assert watch("Dr. Smith") is False
    assert watch("Dr. Smith left. ") is True
    han = SentenceWatch()
    assert [han(t) for t in ("他来", "他来了", "他来了。")] == [False, False, True]


def test_repeat_watch_cases() -> None:
    watch = RepeatWatch(4)
    seen = []
    sentence = "He was born in Vessa, in the village of Vessa, in the village of Vessa."
    for end in [i for i, c in enumerate(sentence) if c == " "] + [len(sentence)]:
        text = sentence[:end]  # word by word
        seen.append(watch(text))
    first = seen.index(True)
    assert not any(seen[:first]) and all(seen[first:])
    assert repeated_ngram(text, 4) is not None
    assert RepeatWatch(0)("a a a a a a") is False  # n < 1: never a repeat, as repeated_ngram
    joined = RepeatWatch(1)
    assert [joined(t) for t in ("FX", "FX-", "FX-2", "FX-200 FX")] == [False, False, False, False]
    assert joined("FX-200 FX-200") is True  # a joined word grew over three calls and stayed one word
