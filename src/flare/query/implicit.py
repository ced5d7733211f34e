"""Implicit queries (M3): the draft with its low-confidence words masked out.

A wrong guess in the draft ("... was born in 1931") would steer the search towards the guess;
removing words whose probability is below β keeps what the model is sure it wants to say and
drops what it is guessing. Words are whole words (:mod:`flare.query.words`): jieba's words in
Chinese, so the query never keeps half of a name or a number. β=0 keeps the whole draft.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from flare.query.words import group_words
from flare.text import fold, join_words
from flare.types import TokenLogprob


def masked_query(tokens: Sequence[TokenLogprob], beta: float, keep: Collection[str] = ()) -> str:
    """The draft's words, without those whose least probable token has p < β.

    Words whose folded form is in ``keep`` stay whatever their probability: a name the question
    or the answer so far already states is not a guess, and it is often what the search needs
    (the bridge entity of a multi-hop question: "the river through Morporwick is …").

    >>> from flare.types import TokenLogprob as T
    >>> import math
    >>> masked_query([T("Paris", math.log(0.2)), T(" is", 0.0), T(" nice", 0.0)], beta=0.4)
    'is nice'
    >>> masked_query([T("审批后", 0.0), T("两", math.log(0.1)), T("个工作日内支付", 0.0)], beta=0.4)
    '审批后工作日内支付'
    """
    return join_words(w.text for w in group_words(tokens) if w.prob >= beta or fold(w.text) in keep)
