"""The look-ahead cap: how far a drafted sentence may run, and how a cut one is marked.

FLARE's look-ahead unit is one sentence (M7). The paper generated 64 tokens and kept the first
sentence; we stop drafting as soon as the first sentence is known to be complete, using the
boundaries of :mod:`flare.text.sentences` (the language rules: abbreviations, closers, Chinese
marks, partial text). This module holds what is the engine's own choice, not a rule of language.

The look-ahead is capped (:func:`lookahead_tokens`): at the paper's 64 tokens for English, and at
a cap sized for Chinese, whose sentences run longer in tokens (Gemma-3 writes about 1.5 Han
characters per token, byte-level vocabularies one or fewer). A sentence that a cap still cuts is
never taken for a whole one: :func:`whole_words_end` drops its last, possibly partial word, and
the engine commits it marked with :data:`CUT_MARK`.

    >>> ends_complete("It lasts three years."), ends_complete("It lasts three")
    (True, False)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flare.text import CLOSERS, MARKS, first_sentence_end, word_spans

if TYPE_CHECKING:
    from flare.config import Settings

# -- the look-ahead cap ------------------------------------------------------------------------

CUT_MARK = "…"
"""Ends a sentence that a cap cut before its end, so no reader takes it for a whole sentence."""

_ENDS = MARKS + CLOSERS


def lookahead_tokens(settings: Settings, language: str) -> int:
    """How many tokens a sentence may take before the look-ahead gives up on its end."""
    return settings.max_sentence_tokens_zh if language == "zh" else settings.max_sentence_tokens


def repeat_words(settings: Settings, language: str) -> int:
    """How many repeated words make a loop (``Settings.repeat_ngram``), in the answer's language.

    jieba cuts Chinese into short words (单字 function words, 1-3 character words), so four of
    them repeat in ordinary text: "一线城市每晚不超过600元，其他城市每晚不超过450元" repeats
    "城市 每晚 不 超过". Chinese counts twice as many words.
    """
    return settings.repeat_ngram * 2 if language == "zh" else settings.repeat_ngram


def ends_complete(text: str) -> bool:
    """Does ``text`` end with a sentence mark (so a cap that hit right there cut nothing)?"""
    stripped = text.rstrip()
    return bool(stripped) and stripped[-1] in _ENDS and first_sentence_end(stripped, final=True) == len(stripped)


def whole_words_end(text: str) -> int:
    """Where to cut a sentence that a cap ended mid-way: before its last word, which may be partial.

    Trailing joiners and clause marks go too, so neither "英格丽·" nor "Ingrid Sol" is kept:

        >>> t = "北风实验室的创始人是海洋生物学家英格丽·"
        >>> t[: whole_words_end(t)]
        '北风实验室的创始人是海洋生物学家'
        >>> t = "It was founded by Ingrid Sol"
        >>> t[: whole_words_end(t)]
        'It was founded by Ingrid'
    """
    spans = word_spans(text)
    if not spans:
        return 0
    last = spans[-1]
    end = last.start if text[last.end :].strip(" ·・-‐/'’") == "" else len(text.rstrip())
    if end == last.start and len(spans) > 1 and _joined(text, spans[-2].end, last.start):
        end = spans[-2].start  # "英格丽·索尔" : the name's first part goes with its cut second part
    return len(text[:end].rstrip(" ·・-‐/'’，,、；;：:"))


def _joined(text: str, left_end: int, right_start: int) -> bool:
    between = text[left_end:right_start]
    return bool(between) and all(c in "·・-‐" for c in between)
