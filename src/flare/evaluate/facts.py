"""Fact-level scoring for questions answered under filters: recall, stale facts and leaks (E2).

A question of this kind (the Chinese development set ``benchmarks/qinglan-zh``) carries its
trusted ``filters``, its gold ``facts`` (each a list of acceptable forms), the ``stale`` facts that
only excluded versions of a rule state, and the ``secret`` facts that only documents outside the
caller's permissions state. Scores of one answer:

* ``fact_recall`` — the share of gold facts the answer states (the headline quality);
* ``stale`` — 1 when the answer states a fact of an excluded version (a tempting old rule);
* ``leak`` — 1 when a passage outside the filters was retrieved or cited, or the answer states a
  secret fact. Filters are applied inside every search, so this must be 0 for every method.

Facts are compared after :func:`normalise`: NFKC, case folding, no spaces, every number written
as its value (``五个工作日``, ``5 个工作日`` and ``5个工作日`` are the same fact; ``15个工作日``
is not ``5个工作日``).

Example::

    >>> fact_in("5个工作日", "审批通过后五个工作日内付款。")
    True
    >>> fact_in("5个工作日", "审批通过后15个工作日内付款。")
    False
    >>> fact_recall("QL-210 售价42000元，重 2.1 公斤。", [["42,000元"], ["2.1公斤"], ["24个月"]])
    0.6666666666666666
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from flare.text import numbers

_SPACE = re.compile(r"\s+")
_MEASURE_AFTER_NUMBER = re.compile(r"(⟩)个")


def normalise(text: str) -> str:
    """The form facts are compared in (see the module notes)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    out: list[str] = []
    pos = 0
    for n in numbers(text):
        out.append(text[pos : n.start])
        value = int(n.value) if n.value == int(n.value) else n.value
        out.append(f"⟨{value}⟩")
        pos = n.end
    out.append(text[pos:])
    return _MEASURE_AFTER_NUMBER.sub(r"\1", _SPACE.sub("", "".join(out)))


def fact_in(fact: str, text: str) -> bool:
    """Does ``text`` state ``fact`` (after normalisation of both)?"""
    return _stated([fact], normalise(text))


def found(forms: Iterable[str], text: str) -> bool:
    """Does ``text`` state the fact in any of its acceptable ``forms``?"""
    return _stated(forms, normalise(text))


def fact_recall(answer: str, facts: Sequence[Sequence[str]]) -> float:
    """The share of ``facts`` (each a list of forms) that ``answer`` states; 1.0 when there are none."""
    if not facts:
        return 1.0
    norm = normalise(answer)
    return sum(1 for forms in facts if _stated(forms, norm)) / len(facts)


def _stated(forms: Iterable[str], normalised_text: str) -> bool:
    """Is any of ``forms`` in the (already normalised) text?"""
    return any((wanted := normalise(f)) and wanted in normalised_text for f in forms)


def score_facts(answer: str, extra: Mapping[str, Any]) -> dict[str, float | None]:
    """Fact recall, stale-fact and secret-fact flags of one answer to a question with ``extra`` fields.

    A permission probe (no gold facts: the answer is only in documents the caller may not see)
    has no recall: its quality is None, so means and pairings leave it out, while ``secret``
    still says whether the answer gave the secret away.
    """
    facts, norm = _forms(extra.get("facts")), normalise(answer)
    recall = sum(1 for forms in facts if _stated(forms, norm)) / len(facts) if facts else None
    return {
        "quality": recall,
        "fact_recall": recall,
        "all_facts": None if recall is None else float(recall == 1.0),
        "stale": float(any(_stated(forms, norm) for forms in _forms(extra.get("stale")))),
        "secret": float(any(_stated(forms, norm) for forms in _forms(extra.get("secret")))),
    }


def _forms(raw: Any) -> list[list[str]]:
    """Facts as lists of forms (a bare string is one form)."""
    return [[f] if isinstance(f, str) else [str(x) for x in f] for f in raw or []]
