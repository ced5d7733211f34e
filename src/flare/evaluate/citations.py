"""Citation quality of an answer, measured like ALCE (Gao et al., 2023) with flare's support checker (E2).

ALCE judges each statement with an NLI model; no such model ships here, so the judge is the
lexical support checker of :mod:`flare.verify.support` (no LM, so the same yardstick for every
method and model). Statements are the answer's sentences that make claims (numbers, names or
content words); "Yes.", "It is not known." or "The documents do not say where he was born."
(:func:`~flare.verify.support.says_not_given`) are not counted.

* ``citation_recall`` — share of claim sentences that cite passages which together support them
  (a sentence without citations scores 0, as in ALCE);
* ``citation_precision`` — share of citations that are needed: the passage supports the sentence
  alone, or the sentence is supported by all its citations but not without this one;
* ``unsupported`` — share of claim sentences not supported by what they cite (1 − recall);
* ``cited_unsupported`` — the same among sentences that cite something;
* ``flagged`` — share of sentences shown with the unverified mark;
* ``shown_unsupported`` — share of claim sentences that are unsupported and *not* marked: what a
  reader would take on trust and should not.

On the evaluation world, :mod:`flare.evaluate.world.truth` measures the same things exactly, from
the facts each passage is known to state; these figures are for data without such ground truth.
"""

from __future__ import annotations

from collections.abc import Sequence

from flare.types import Answer, Citation, Passage
from flare.verify.support import check, claims, says_not_given

FIGURES = ("citation_recall", "citation_precision", "unsupported", "cited_unsupported", "flagged",
           "shown_unsupported")  # fmt: skip


def _supported(text: str, passages: Sequence[Passage], context: Sequence[str]) -> bool:
    return bool(passages) and check(text, passages, context=context).label == "supported"


def citation_scores(answer: Answer) -> dict[str, float | None]:
    """The figures above for one answer; None where nothing was there to count."""
    sources = {c.n: _passage(c) for c in answer.sources}
    recall: list[bool] = []
    cited_ok: list[bool] = []
    needed: list[bool] = []
    shown_bad: list[bool] = []
    context = [answer.question]
    for s in answer.sentences:
        context.append(s.text)
        if not claims(s.text) or says_not_given(s.text):
            continue
        before = context[:-1]
        cited = [sources[n] for n in s.citations if n in sources]
        ok = _supported(s.text, cited, before)
        recall.append(ok)
        shown_bad.append(not ok and not s.flagged)
        if cited:
            cited_ok.append(ok)
        for i, p in enumerate(cited):
            others = cited[:i] + cited[i + 1 :]
            needed.append(_supported(s.text, [p], before) or (ok and not _supported(s.text, others, before)))
    flagged = [s.flagged for s in answer.sentences]
    return {
        "citation_recall": _share(recall),
        "citation_precision": _share(needed),
        "unsupported": None if not recall else 1.0 - sum(recall) / len(recall),
        "cited_unsupported": None if not cited_ok else 1.0 - sum(cited_ok) / len(cited_ok),
        "flagged": _share(flagged),
        "shown_unsupported": _share(shown_bad),
    }


def _share(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def _passage(c: Citation) -> Passage:
    return Passage(c.passage_id, c.text, c.title)
