"""Typed events emitted while an answer is produced.

Only :class:`SentenceAccepted` carries answer text, and only for a committed sentence: a draft
that is about to be rejected never appears in any event (O2). :class:`Searching` and
:class:`Rewriting` are progress signals a UI may show or ignore.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from flare.types import Answer, Citation, Sentence


@dataclass(frozen=True, slots=True)
class Searching:
    """Retrieval started for sentence ``step`` (the queries are not shown to end users)."""

    type: ClassVar[str] = "searching"
    step: int
    n_queries: int


@dataclass(frozen=True, slots=True)
class Rewriting:
    """The sentence ``step`` is being regenerated from new documents."""

    type: ClassVar[str] = "rewriting"
    step: int


@dataclass(frozen=True, slots=True)
class SentenceAccepted:
    """A committed sentence, with the sources it cites that were not cited before."""

    type: ClassVar[str] = "sentence"
    step: int
    sentence: Sentence
    new_sources: tuple[Citation, ...]


@dataclass(frozen=True, slots=True)
class Finished:
    """The answer is complete; ``answer.stop_reason`` says why it ended."""

    type: ClassVar[str] = "done"
    answer: Answer


Event = Searching | Rewriting | SentenceAccepted | Finished
