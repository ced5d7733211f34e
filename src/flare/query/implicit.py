"""Implicit queries (M3): the draft with its low-confidence words masked out.

A wrong guess in the draft ("... was born in 1931") would steer the search towards the guess;
removing words whose probability is below β keeps what the model is sure it wants to say and
drops what it is guessing. β=0 keeps the whole draft as the query.
"""

from __future__ import annotations

from collections.abc import Sequence

from flare.query.words import group_words
from flare.types import TokenLogprob


def masked_query(tokens: Sequence[TokenLogprob], beta: float) -> str:
    """The draft without words whose least probable token has p < β.

    >>> from flare.types import TokenLogprob as T
    >>> import math
    >>> masked_query([T("Paris", math.log(0.2)), T(" is", 0.0), T(" nice", 0.0)], beta=0.4)
    'is nice'
    """
    kept = [w.text for w in group_words(tokens) if w.prob >= beta]
    return _join(kept)


def _join(words: list[str]) -> str:
    out = ""
    for w in words:
        if out and not (_cjk(out[-1]) and _cjk(w[0])):
            out += " "
        out += w
    return out.strip()


def _cjk(ch: str) -> bool:
    return "\u3400" <= ch <= "\u9fff"
