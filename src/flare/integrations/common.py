"""What both framework adapters share: argument checks, the leak check, ids, and rendered streams."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from flare.engine.events import Finished, SentenceAccepted
from flare.engine.loop import Flare
from flare.errors import FilterError, InputError, RetrieverError
from flare.retrieve.filters import Filters
from flare.types import Answer, Hit

__all__ = [
    "RESERVED", "RenderedStream", "check_k", "passage_meta", "question_and_filters", "refuse", "stable_id", "within",
]  # fmt: skip

RESERVED = ("id", "title")
"""Metadata keys that hold a passage's own fields; they are not filterable meta."""


def check_k(k: int) -> None:
    if k < 0:
        raise InputError(f"k must be 0 or more, got {k}", "ask for k=5 or so")


def refuse(filters: Filters, what: str, hint: str) -> FilterError:
    """The error for filters a wrapped retriever cannot apply: never search without them."""
    return FilterError(f"{what} cannot apply filters ({filters}); refusing to search without them", hint)


def within(hits: Sequence[Hit], filters: Filters, what: str) -> list[Hit]:
    """``hits`` if all pass ``filters``; a translated filter that let one through is an error."""
    if filters:
        for h in hits:
            if not filters.matches(h.passage.meta):
                raise RetrieverError(
                    f"{what} returned {h.passage.id!r}, which fails the filters {filters}",
                    "the filter translation does not match flare's filter semantics; fix it",
                )
    return list(hits)


def passage_meta(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A framework document's metadata as passage meta: everything but :data:`RESERVED`."""
    return {k: v for k, v in metadata.items() if k not in RESERVED}


def stable_id(given: object, text: str) -> str:
    """The framework's id for a document, or a hash of its text when it has none."""
    if isinstance(given, str) and given:
        return given
    return "sha1:" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def question_and_filters(value: str | Mapping[str, Any], trusted: Filters) -> tuple[str, Filters]:
    """A question given as text or ``{"question": ..., "filters": [...]}``; its filters only narrow."""
    if isinstance(value, str):
        return value, trusted
    if not isinstance(value, Mapping) or not isinstance(value.get("question"), str):
        raise InputError("input must be a question or a mapping with a 'question' string", 'e.g. {"question": "..."}')
    extra = value.get("filters") or ()
    if isinstance(extra, Filters):
        return value["question"], trusted.narrow(extra)
    if isinstance(extra, str) or not all(isinstance(e, str) for e in extra):
        raise InputError("'filters' must be a list of expressions like 'year>=2025'", "or a flare Filters value")
    return value["question"], trusted.narrow(Filters.parse(extra))


class RenderedStream:
    """An answer as text chunks that add up to ``Answer.render()``: each accepted sentence with
    its ``[n]`` and ``[?]`` marks as it is accepted, then the notes and the source list (which
    ``render()`` puts after the body). Drafts never appear (O2).

    :attr:`answer` is set once the chunks are exhausted.
    """

    def __init__(self, engine: Flare, question: str, filters: Filters) -> None:
        self.engine, self.question, self.filters = engine, question, filters
        self.answer: Answer | None = None

    def __iter__(self) -> Iterator[str]:
        shown, accepted = "", []
        for event in self.engine.stream(self.question, filters=self.filters):
            if isinstance(event, SentenceAccepted):
                accepted.append(event.sentence)
                body = Answer(self.question, tuple(accepted), (), "", "").render_body()
                if body.startswith(shown) and len(body) > len(shown):
                    yield body[len(shown) :]
                    shown = body
            elif isinstance(event, Finished):
                self.answer = event.answer
                full = event.answer.render()
                if not full.startswith(shown):  # pragma: no cover - render() appends only
                    raise AssertionError("the rendered answer changed while it streamed")
                if len(full) > len(shown):
                    yield full[len(shown) :]
