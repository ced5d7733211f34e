"""Group drafted tokens into whole words, so a query never holds half a word.

Tokens are cut wherever the tokenizer likes: " Vers" + "ace", "英格" + "丽", or one token "司的"
that spans two Chinese words. Words are found on the draft's text by :func:`flare.text.word_spans`
— runs of letters and digits (``FX-200`` and ``GB/T`` stay whole) and, for Chinese, jieba's
words — and a word is as uncertain as the least probable token that overlaps it. Punctuation
and spaces belong to no word.

Example::

    >>> import math
    >>> from flare.types import TokenLogprob as T
    >>> draft = [T("款项在", 0.0), T("两", math.log(0.1)), T("个工作日", 0.0)]
    >>> [(w.text, round(w.prob, 2)) for w in group_words(draft)]
    [('款项', 1.0), ('在', 1.0), ('两个', 0.1), ('工作日', 1.0)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flare.text import word_spans
from flare.types import TokenLogprob


@dataclass(frozen=True, slots=True)
class Word:
    """A word of the draft, the probability of its least likely token, and where it stands."""

    text: str
    prob: float
    index: int  # position among the draft's words


def group_words(tokens: Sequence[TokenLogprob]) -> list[Word]:
    """Words of a draft, in order, each with the minimum probability of the tokens it overlaps."""
    text = "".join(t.text for t in tokens)
    bounds: list[tuple[int, int, float]] = []
    pos = 0
    for t in tokens:
        bounds.append((pos, pos + len(t.text), t.prob))
        pos += len(t.text)
    words: list[Word] = []
    i = 0  # first token that can still overlap the next word (words come in text order)
    for span in word_spans(text):
        while i < len(bounds) and bounds[i][1] <= span.start:
            i += 1
        prob = 1.0
        for start, _end, p in bounds[i:]:
            if start >= span.end:
                break
            prob = min(prob, p)
        words.append(Word(span.text, prob, len(words)))
    return words
