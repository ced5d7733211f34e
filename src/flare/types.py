"""Plain, frozen records shared by every layer of flare.

The engine, the LM backends, the retrievers and the tracers only exchange these types, so each
layer can be swapped without the others noticing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from flare.text import join_words

FinishReason = Literal["stop", "length", "sentence"]
"""Why a completion ended: a stop sequence or the end of text (``stop``), ``max_tokens``
(``length``), or the caller's ``stop_when`` (``sentence``, the end of a sentence)."""

EndReason = Literal[
    "end", "max_sentences", "max_output_tokens", "max_sentence_tokens", "max_seconds", "no_evidence", "repetition"
]
"""Why an answer ended: the model finished (``end``), a budget (``max_sentence_tokens``: a
sentence ran past the look-ahead cap and was committed marked as cut), nothing found for a gap, or
a sentence that repeated an earlier one. A policy ends an answer by returning one of these."""

StopReason = EndReason | Literal[""]
"""An answer's ``stop_reason``: its :data:`EndReason`, or ``""`` for a partial answer rendered
while it is still being written."""

MetaValue = str | int | float | bool | list[str] | list[int] | list[float]


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    """One generated piece of text and its natural-log probability.

    ``text`` is always whole Unicode characters: backends merge byte-level tokens that split a
    UTF-8 character, and the merged piece carries the summed log-probability (the joint
    probability of the bytes), so probabilities line up with what a reader sees.
    """

    text: str
    logprob: float

    @property
    def prob(self) -> float:
        return math.exp(self.logprob)


@dataclass(frozen=True, slots=True)
class Completion:
    """What one call to :meth:`LanguageModel.complete` produced.

    ``tokens`` come from the very decoding pass that produced ``text`` (never re-tokenised), and
    ``"".join(t.text for t in tokens) == text``. ``prompt_tokens_evaluated`` counts only prompt
    tokens the model actually had to evaluate (a reused cached prefix costs nothing).
    """

    text: str
    tokens: tuple[TokenLogprob, ...]
    finish_reason: FinishReason
    prompt_tokens: int = 0
    prompt_tokens_evaluated: int = 0
    generated_tokens: int = 0
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class Passage:
    """A retrievable unit of text. ``meta`` holds typed metadata used by filters (e.g. ``acl``)."""

    id: str
    text: str
    title: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Hit:
    """A passage returned by a search, with the retriever's score (higher is better)."""

    passage: Passage
    score: float


@dataclass(frozen=True, slots=True)
class Citation:
    """A source cited by the answer: ``n`` is the number shown inline as ``[n]``."""

    n: int
    passage_id: str
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class Sentence:
    """One committed sentence of an answer.

    ``retrieved`` says whether documents were fetched for it, ``citations`` are the ``n`` numbers
    of the sources it cites, and ``grounded`` is False when it was committed without the evidence
    it asked for (a cap was hit or nothing relevant was found).

    ``support`` is the support checker's verdict (``"unchecked"`` when verification is off):
    ``"supported"`` and ``"no_claims"`` pass; ``"partial"`` and ``"unsupported"`` sentences are
    flagged and cite nothing, and ``unsupported`` lists the spans their passages do not back.
    """

    text: str
    retrieved: bool
    citations: tuple[int, ...] = ()
    grounded: bool = True
    support: str = "unchecked"
    unsupported: tuple[str, ...] = ()

    @property
    def flagged(self) -> bool:
        """Shown with a mark: not backed by its sources, or written without the evidence it needed."""
        return self.support in ("partial", "unsupported") or not self.grounded

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text, "retrieved": self.retrieved, "citations": list(self.citations),
            "grounded": self.grounded, "support": self.support, "unsupported": list(self.unsupported),
            "flagged": self.flagged,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class Answer:
    """The result of one FLARE run.

    ``stop_reason`` says what ended the answer: ``"end"`` (the model finished), or the cap or
    condition that stopped it (``"max_sentences"``, ``"max_output_tokens"``, ``"max_seconds"``,
    ``"no_evidence"``, ``"repetition"``). ``caps_hit`` lists caps that were reached without
    ending the answer (e.g. ``"max_retrievals"``: later sentences were written unretrieved).
    """

    question: str
    sentences: tuple[Sentence, ...]
    sources: tuple[Citation, ...]
    stop_reason: StopReason
    trace_id: str
    retrievals: int = 0
    lm_calls: int = 0
    caps_hit: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The answer as plain prose, without citation markers."""
        return join_words(s.text for s in self.sentences)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view: text, rendered text, sentences, sources and run figures."""
        return {
            "question": self.question,
            "answer": self.text,
            "rendered": self.render(),
            "sentences": [s.to_dict() for s in self.sentences],
            "sources": [{"n": c.n, "id": c.passage_id, "title": c.title} for c in self.sources],
            "stop_reason": self.stop_reason,
            "caps_hit": list(self.caps_hit),
            "retrievals": self.retrievals,
            "lm_calls": self.lm_calls,
            "trace_id": self.trace_id,
        }

    def render(self) -> str:
        """The answer with inline ``[n]`` markers, then its sources and what is unverified.

        A flagged sentence (see :attr:`Sentence.flagged`) carries the mark ``[?]``, and a note
        after the sources says why: which of its words the cited passages do not back, or that
        it was written without the evidence it needed.
        """
        lines = [self.render_body()]
        if self.sources:
            lines += ["", "Sources:"]
            lines += [f"[{c.n}] {c.title or c.passage_id} ({c.passage_id})" for c in self.sources]
        notes = [_why(i, s) for i, s in enumerate(self.sentences, start=1) if s.flagged]
        if notes:
            lines += ["", f"{UNVERIFIED_MARK} Not verified against the sources:", *notes]
        return "\n".join(lines)

    def render_body(self) -> str:
        """Just the sentences with their ``[n]`` and ``[?]`` marks (what a stream sends first)."""
        parts = []
        for s in self.sentences:
            marks = "".join(f"[{n}]" for n in s.citations) + (UNVERIFIED_MARK if s.flagged else "")
            parts.append(_attach(s.text, marks))
        return join_words(parts)


UNVERIFIED_MARK = "[?]"


def _why(i: int, s: Sentence) -> str:
    if s.unsupported:
        spans = ", ".join(f'"{span}"' for span in s.unsupported)
        return f"- sentence {i}: {spans} not found in the passages it was written from"
    if not s.grounded:
        return f"- sentence {i}: written without the sources it needed"
    return f"- sentence {i}: the passages it was written from do not back it"


def _attach(text: str, marks: str) -> str:
    """Put citation markers before the sentence's closing punctuation ("... 1997 [1].")."""
    if not marks:
        return text
    stripped = text.rstrip()
    if stripped and stripped[-1] in ".!?。！？":
        return f"{stripped[:-1]}{marks}{stripped[-1]}"
    return f"{stripped}{marks}"
