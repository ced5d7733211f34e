"""Sentence boundaries for English and Chinese, usable on text that is still being generated.

FLARE's look-ahead unit is one sentence (M7). The paper generated 64 tokens and kept the first
sentence; we stop drafting as soon as the first sentence is known to be complete, which needs a
splitter that can tell "5.5" and "U.S." from a full stop on a prefix of the text.

A boundary in English needs ``.``, ``!`` or ``?`` (optionally followed by closing quotes or
brackets) and then whitespace: so "5.5" never splits, and a period at the very end of a partial
text is not yet a boundary (the next token may turn it into "5.5"). Chinese and full-width marks
(``。！？``, and ``……``) end a sentence at once, and so does a ``.`` written straight before a
Chinese character ("IP68.它"). A newline always ends one. ``；`` and ``，`` join clauses of one
sentence and never end it.

The look-ahead is capped (:func:`lookahead_tokens`): at the paper's 64 tokens for English, and at
a cap sized for Chinese, whose sentences run longer in tokens (Gemma-3 writes about 1.5 Han
characters per token, byte-level vocabularies one or fewer). A sentence that a cap still cuts is
never taken for a whole one: :func:`whole_words_end` drops its last, possibly partial word, and
the engine commits it marked with :data:`CUT_MARK`.

    >>> split_sentences("Dr. Smith moved to the U.S. in 1999. He was 5.5 ft tall! 他来了。好。")
    ['Dr. Smith moved to the U.S. in 1999.', 'He was 5.5 ft tall!', '他来了。', '好。']
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from flare.text import HAN_RE, word_spans

if TYPE_CHECKING:
    from flare.config import Settings

_ABBREVIATIONS = frozenset(
    [
        "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "etc", "inc", "ltd", "co", "corp", "fig", "no",
        "vol", "pp", "ed", "eds", "al", "approx", "dept", "est", "gen", "gov", "col", "lt", "sgt", "capt", "rev",
        "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "e.g", "i.e", "u.s",
        "u.k", "u.n", "a.m", "p.m", "ph.d", "b.a", "m.a", "d.c"
    ]
)
_CLOSERS = "\"'”’)]}」』）"
_EN_ENDS = ".!?"


def first_sentence_end(text: str, *, final: bool = False) -> int | None:
    """Index just past the end of the first complete sentence in ``text``, or None.

    With ``final=True`` the text is known to be finished, so a sentence mark at the very end
    counts as a boundary (and so does the end of the text itself if it holds any content).
    """
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            if text[:i].strip():
                return i
        elif ch in "。！？…" or (ch in "!?" and _cjk_before(text, i)) or (ch == "." and _han_after(text, i)):
            end = _skip_closers(text, i + 1)
            if text[:end].strip():
                return end
        elif ch in _EN_ENDS:
            end = _skip_closers(text, i + 1)
            while end < n and text[end] in _EN_ENDS:
                end = _skip_closers(text, end + 1)
            if end >= n:
                return _final_end(text) if final else None
            if text[end].isspace() and not (_is_abbreviation(text, i) or _is_initial(text, i)):
                return end
            i = end - 1
        i += 1
    return _final_end(text) if final else None


def _final_end(text: str) -> int | None:
    return len(text.rstrip()) if text.strip() else None


def split_sentences(text: str) -> list[str]:
    """All sentences of a finished text, stripped, in order."""
    out: list[str] = []
    rest = text
    while rest.strip():
        end = first_sentence_end(rest, final=True)
        if end is None:
            break
        piece = rest[:end].strip()
        if piece:
            out.append(piece)
        rest = rest[end:]
    return out


def ends_sentence(text: str) -> bool:
    """True when ``text`` (being generated) already holds one complete sentence."""
    return first_sentence_end(text) is not None


def _skip_closers(text: str, j: int) -> int:
    while j < len(text) and text[j] in _CLOSERS:
        j += 1
    return j


def _cjk_before(text: str, i: int) -> bool:
    return i > 0 and "\u3000" <= text[i - 1] <= "\u9fff"


def _han_after(text: str, i: int) -> bool:
    """A period written straight before a Chinese character ends the sentence ("IP68.它")."""
    return i > 0 and i + 1 < len(text) and bool(HAN_RE.match(text[i + 1])) and not text[i - 1].isspace()


_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)$")


def _is_abbreviation(text: str, i: int) -> bool:
    """Is the period at ``i`` the end of a known abbreviation such as "Dr." or "U.S."?"""
    if text[i] != ".":
        return False
    m = _WORD_BEFORE.search(text[:i])
    if not m:
        return False
    word = m.group(1).lower().strip(".")
    return word in _ABBREVIATIONS


def _is_initial(text: str, i: int) -> bool:
    """A single capital letter before the period ("J. K. Rowling") is an initial."""
    if text[i] != "." or i == 0 or not text[i - 1].isupper():
        return False
    return i == 1 or not text[i - 2].isalpha()


# -- the look-ahead cap ------------------------------------------------------------------------

CUT_MARK = "…"
"""Ends a sentence that a cap cut before its end, so no reader takes it for a whole sentence."""

_ENDS = "。！？!?.…" + _CLOSERS


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
