"""The trigger (M2): does a drafted sentence need retrieval?

Four token rules, chosen by ``Settings.trigger``:

* ``min`` (the paper's): retrieve if any token has p < θ. θ=0 never retrieves; θ=1 always does.
* ``mean``: retrieve if mean(1 − p) over the sentence exceeds 1 − θ (i.e. mean p < θ), which is
  less sensitive to a single unsure function word.
* ``dynamic``: the ``min`` rule with θ for fact-dense sentences (numbers, dates, names) and the
  looser ``theta_prose`` for connective prose.
* ``content``: the ``min`` rule over content words only. Small models put sentence openers and
  function words ("It", " the", " was") far below any useful θ, so the plain rule retrieves for
  nearly every sentence; judging only the words that carry facts restores the signal.

The default, ``support``, is not a token rule and is not decided here: the loop drafts with the
question's documents and retrieves when the support checker finds the draft unbacked
(:mod:`flare.engine.policies`); this module's verdict is then recorded for the trace only.

Probabilities are compared on the probability scale; backends report natural-log probabilities,
converted by :attr:`TokenLogprob.prob`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from flare.config import Settings
from flare.query.words import group_words
from flare.text import char_content_words, numbers
from flare.types import TokenLogprob

_CAPITALISED = re.compile(r"(?<=[a-z,;:] )[A-Z][a-z]+")
_CODE = re.compile(r"[A-Za-z]+[-/]?\d|“[^”]{1,12}”|《[^》]{1,30}》")  # QL-300, “岚途”, 《差旅办法》


@dataclass(frozen=True, slots=True)
class Judgement:
    """The verdict on a draft: retrieve or not, the threshold used, and the low tokens."""

    retrieve: bool
    threshold: float
    score: float  # min p ("min"/"dynamic") or mean p ("mean")
    low_tokens: tuple[tuple[str, float], ...]


def fact_dense(text: str) -> bool:
    """Does the sentence state numbers, dates or names (where a wrong guess costs most)?

    Numbers in every form count (:func:`flare.text.numbers`): ``1,642``, ``ten``, ``十个工作日``,
    ``二〇二六年``; so do capitalised names inside a sentence, product codes and quoted names.
    """
    counted = any(n.text != "一" for n in numbers(text))  # "一个", "一种": an article more than a count
    return counted or bool(_CAPITALISED.search(text) or _CODE.search(text))


def judge(text: str, tokens: Sequence[TokenLogprob], settings: Settings) -> Judgement:
    """Apply the configured trigger rule to a draft sentence and its tokens."""
    scored = [t for t in tokens if t.text.strip()]
    theta = settings.theta
    if settings.trigger == "dynamic" and not fact_dense(text):
        theta = settings.theta_prose
    if settings.trigger == "content":
        # Spaces and punctuation never count, but they still separate words ("in" + " " + "1941").
        neutral = [t if any(c.isalnum() for c in t.text) else TokenLogprob(t.text, 0.0) for t in tokens]
        words = [w for w in group_words(neutral) if char_content_words(w.text)]
        scored = [TokenLogprob(w.text, math.log(max(w.prob, 1e-12))) for w in words]
    low = tuple((t.text, t.prob) for t in scored if t.prob < theta)
    if not scored:
        return Judgement(theta >= 1.0, theta, 1.0, low)
    probs = [t.prob for t in scored]
    score = sum(probs) / len(probs) if settings.trigger == "mean" else min(probs)
    retrieve = theta >= 1.0 or score < theta
    return Judgement(retrieve, theta, score, low)
