"""Words: where they are, the form they are compared in, and which of them carry content.

* A word is a run of letters or digits (``FX-200``, ``GB/T``, ``U.S`` and ``O'Brien`` stay
  whole: one hyphen, slash, dot or apostrophe between letters/digits joins them), or a Chinese
  word: Han runs are segmented by jieba into whole words.
* :func:`content_words` folds words (NFKC, case-folded) and drops function words; it is what
  queries, restated sentences and the support checker compare.
* :func:`char_content_words` is the cheaper, unsegmented variant: each Han character is its own
  word and a run of letters or digits stops at one ("2026年" is "2026" and "年"). Citation
  overlap, the ``content`` trigger and the in-memory test retriever use it, where a shared
  character is evidence enough and no segmenter should be loaded.

    >>> sorted(content_words("The Angara flows out of Lake Baikal."))
    ['angara', 'baikal', 'flows', 'lake', 'out']
    >>> sorted(char_content_words("差旅费 in 2026年"))
    ['2026', '年', '差', '旅', '费']
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from flare.text.scripts import HAN

STOPWORDS = frozenset(
    [
        "a", "an", "the", "of", "in", "on", "at", "to", "for", "and", "or", "but", "is", "are", "was", "were", "be",
        "been", "by", "with", "as", "from", "that", "this", "it", "its", "he", "she", "they", "his", "her", "their",
        "which", "who", "whom", "what", "when", "where", "how", "than", "then", "so", "not", "no",
        "也", "的", "了", "是", "在", "和", "与", "及", "或", "就", "都", "而", "其", "这", "那", "有",
    ]
)  # fmt: skip
"""Function words that never carry a fact (English and Chinese)."""

# A word: letters/digits, optionally joined by one hyphen, slash, dot or apostrophe to more
# letters/digits ("FX-200", "GB/T", "U.S", "O'Brien"); or a run of Han characters (segmented).
_WORD = re.compile(rf"(?P<han>[{HAN}]+)|(?P<word>[^\W_{HAN}]+(?:[-/.'’][^\W_{HAN}]+)*)")

# Each Han character is a word here, and a run of letters or digits stops at one.
_CHAR_WORD = re.compile(rf"[{HAN}]|[^\W_{HAN}]+")


@dataclass(frozen=True, slots=True)
class Span:
    """A piece of a text: its characters ``text[start:end]``."""

    text: str
    start: int
    end: int


def word_spans(text: str) -> list[Span]:
    """Every word of ``text`` with its position; Chinese runs are cut into jieba words."""
    out: list[Span] = []
    for m in _WORD.finditer(text):
        _add_spans(out, m)
    return out


def _add_spans(out: list[Span], m: re.Match[str]) -> None:
    if m.lastgroup == "han":
        pos = m.start()
        for w in _segment(m.group()):
            out.append(Span(w, pos, pos + len(w)))
            pos += len(w)
    else:
        out.append(Span(m.group(), m.start(), m.end()))


def words(text: str) -> list[str]:
    """The words of ``text``, in order (see :func:`word_spans`)."""
    return [s.text for s in word_spans(text)]


def fold(word: str) -> str:
    """The form words are compared in: NFKC, case-folded, curly apostrophes straightened."""
    return unicodedata.normalize("NFKC", word).casefold().replace("’", "'")


def content_words(text: str) -> set[str]:
    """Folded words of ``text`` that may carry content (function words removed)."""
    return {w for w in (fold(s) for s in words(text)) if w not in STOPWORDS}


def char_content_words(text: str) -> set[str]:
    """Lower-cased words of ``text`` that may carry content, each Han character its own word.

    No segmentation: "差旅费" gives "差", "旅", "费". Function words are removed as in
    :func:`content_words` (a Chinese function word of one character is dropped here too).
    """
    return {w for w in (m.group(0).lower() for m in _CHAR_WORD.finditer(text)) if w not in STOPWORDS}


def repeated_ngram(text: str, n: int) -> int | None:
    """Where ``text`` starts saying again a run of ``n`` words it already said, or None.

    Small models fall into loops ("born in Vessa, in the village of Vessa in the village of
    Vessa …"); the offset returned is the start of the first repeated run's second occurrence, so
    cutting there keeps everything said once.

    >>> t = "He was born in Vessa, in the village of Vessa, in the village of Vessa."
    >>> t[: repeated_ngram(t, 4)]
    'He was born in Vessa, in the village of '
    """
    if n < 1:
        return None
    spans = word_spans(text)
    folded = [fold(s.text) for s in spans]
    seen: set[tuple[str, ...]] = set()
    for i in range(len(spans) - n + 1):
        gram = tuple(folded[i : i + n])
        if gram in seen:
            return spans[i].start
        seen.add(gram)
    return None


class RepeatWatch:
    """Whether :func:`repeated_ngram` finds a repeat, for a text asked after every generated token.

    Words that can no longer change (a character follows them that cannot join them: see
    :data:`_WORD`) are read and folded once; each call reads only the last word or two again,
    and compares only the runs of ``n`` words that hold one of them. A text that does not extend
    the one before starts again. Answers exactly ``repeated_ngram(text, n) is not None``.

        >>> watch = RepeatWatch(2)
        >>> [watch(t) for t in ("in the", "in the village of", "in the village of in", "in the village of in the")]
        [False, False, False, True]
    """

    __slots__ = ("_found", "_grams", "_n", "_pos", "_text", "_words")

    def __init__(self, n: int) -> None:
        self._n = n
        self._reset("")

    def _reset(self, text: str) -> None:
        self._text = text
        self._pos = 0  # words that end before this never change
        self._words: list[str] = []  # their folded forms
        self._grams: set[tuple[str, ...]] = set()  # runs of n of them (no two alike, or _found)
        self._found = False

    def __call__(self, text: str) -> bool:
        n = self._n
        if n < 1:
            return False
        if not text.startswith(self._text):
            self._reset(text)
        self._text = text
        if self._found:
            return True
        last = len(text) - 1
        fixed: list[Span] = []
        loose: list[Span] = []
        settled = True
        for m in _WORD.finditer(text, self._pos):
            # A word ending two or more characters before the end cannot grow: the character
            # after it is no letter, digit or Han character, nor a joiner followed by one.
            settled = settled and m.end() < last
            _add_spans(fixed if settled else loose, m)
            if settled:
                self._pos = m.end()
        words = self._words
        first_new = max(0, len(words) - n + 1)
        words.extend(fold(s.text) for s in fixed)
        stable = len(words)
        candidate = words + [fold(s.text) for s in loose]
        seen = self._grams
        extra: set[tuple[str, ...]] = set()
        for i in range(first_new, len(candidate) - n + 1):
            gram = tuple(candidate[i : i + n])
            if gram in seen or gram in extra:
                # a repeat of settled words stays one however the text goes on; one that holds
                # the last word may not (it can grow into another word)
                self._found = i + n <= stable
                return True
            (seen if i + n <= stable else extra).add(gram)
        return False


def _segment(run: str) -> list[str]:
    """Whole jieba words of a Han run (precise mode: the words partition the run)."""
    if len(run) == 1:
        return [run]
    import rjieba

    cut: list[str] = rjieba.cut(run)
    return [w for w in cut if w]
