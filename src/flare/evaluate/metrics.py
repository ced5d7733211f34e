"""Answer quality and retrieval metrics for evaluation (E2).

Quality, per task:

* short answers (multi-hop, NQ): the answer is extracted after the last "So the answer is", then
  EM, token F1, precision and recall against every alias (the best alias counts), after the usual
  normalisation: lowercase, drop punctuation and the articles a/an/the, collapse whitespace;
* yes/no (StrategyQA): accuracy of the extracted yes/no against the gold label;
* long form (ASQA): ROUGE-L F against the best reference (token LCS, no stemming, implemented
  here) and short-answer EM: the share of the question's disambiguations (``qa_pairs``) for which
  some short answer appears in the normalised output.

Cost and behaviour come from traces: retrieval rate (share of sentences whose step searched),
retrievals and LM calls per answer, latency p50/p95, and recall of gold passages among all
passages an answer retrieved. A failed example counts as wrong (every score 0) and is reported.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from flare.text.sentences import sentence_ends

ANSWER_CUE = re.compile(r"so the answer is\s*:?\s*", re.IGNORECASE)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation + "‘’“”")
YES_NO = ("yes", "no")


def normalize(text: str) -> str:
    """Lowercase, strip punctuation and articles, collapse whitespace (SQuAD-style)."""
    text = text.lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def extract_answer(text: str) -> tuple[str, bool]:
    """The text after the *last* "So the answer is" (up to its sentence end), and whether the cue was there.

    The answer ends at the first full stop that ends a sentence: not the one of an initial or an
    abbreviation ("So the answer is M. Night Shyamalan.", "… with Dr. Steve Brule."), nor a
    "!" or "?" inside a title ("Check It Out!"). Without the cue the whole output is returned, so
    EM fails but F1 still gives partial credit.
    """
    cues = list(ANSWER_CUE.finditer(text))
    if not cues:
        return text.strip(), False
    rest = text[cues[-1].end() :].strip()
    ends = set(sentence_ends(rest))
    for stop in re.finditer(r"\.(?=\s|$)", rest):
        # "No." abbreviates "number" in prose ("No. 5"); as the whole answer it is the word no.
        if stop.end() in ends or rest[: stop.start()].strip().lower() == "no":
            rest = rest[: stop.start()]
            break
    return rest.strip().rstrip(".").strip(), True


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    """1.0 when the normalised prediction equals some normalised gold answer."""
    p = normalize(prediction)
    return float(any(p == normalize(g) for g in golds))


@dataclass(frozen=True, slots=True)
class TokenScores:
    """Token-overlap scores of one prediction against its best-matching alias."""

    f1: float
    precision: float
    recall: float


def token_scores(prediction: str, golds: Sequence[str]) -> TokenScores:
    """F1 / precision / recall of normalised tokens; the alias with the best F1 is used."""
    best = TokenScores(0.0, 0.0, 0.0)
    pred = normalize(prediction).split()
    for gold in golds:
        ref = normalize(gold).split()
        common = sum((Counter(pred) & Counter(ref)).values())
        if not common:
            continue
        precision, recall = common / len(pred), common / len(ref)
        f1 = 2 * precision * recall / (precision + recall)
        if f1 > best.f1:
            best = TokenScores(f1, precision, recall)
    return best


def yes_no(text: str) -> str | None:
    """The yes/no an answer commits to: the first word of the extracted answer, if yes or no."""
    words = normalize(text).split()
    return words[0] if words and words[0] in YES_NO else None


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence (two-row dynamic programme)."""
    if len(a) < len(b):
        a, b = b, a
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, start=1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def rouge_l(prediction: str, references: Sequence[str]) -> float:
    """ROUGE-L F1 (β=1) on lowercased word tokens, best over references."""
    pred = re.findall(r"\w+", prediction.lower())
    best = 0.0
    for ref in references:
        toks = re.findall(r"\w+", ref.lower())
        lcs = lcs_length(pred, toks)
        if lcs:
            p, r = lcs / len(pred), lcs / len(toks)
            best = max(best, 2 * p * r / (p + r))
    return best


def short_answer_em(prediction: str, qa_pairs: Sequence[tuple[str, Sequence[str]]]) -> float:
    """ASQA STR-EM: share of disambiguated questions with a short answer contained in the output."""
    if not qa_pairs:
        return 0.0
    text = f" {normalize(prediction)} "
    found = sum(any(f" {normalize(a)} " in text for a in answers if normalize(a)) for _, answers in qa_pairs)
    return found / len(qa_pairs)


def gold_recall(supporting: Iterable[str], retrieved: Iterable[str]) -> float | None:
    """Share of the gold passages that were retrieved at any step; None when there are no gold ids."""
    gold = set(supporting)
    if not gold:
        return None
    return len(gold & set(retrieved)) / len(gold)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0–100) with linear interpolation; NaN for no values."""
    if not values:
        return math.nan
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def mean(values: Iterable[float | None]) -> float:
    """Mean of the values that are not None; NaN when there are none."""
    xs = [v for v in values if v is not None]
    return sum(xs) / len(xs) if xs else math.nan
