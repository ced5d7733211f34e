"""A tiny in-memory retriever for tests and examples: word-overlap scoring, filters inside.

It follows the :class:`~flare.retrieve.base.Retriever` contract exactly (filters applied before
scoring, at most ``k`` hits, ``[]`` when nothing matches), so engine tests do not need an index
on disk. Real retrieval is :class:`flare.retrieve.tantivy_index.TantivyRetriever`.

Example::

    from flare.testing.memory import MemoryRetriever
    from flare.types import Passage
    r = MemoryRetriever([Passage("p1", "Paris is the capital of France.", "Paris")])
    assert r.search("capital of France", k=1)[0].passage.id == "p1"
"""

from __future__ import annotations

from collections.abc import Iterable

from flare.errors import InputError
from flare.retrieve.base import check_fields
from flare.retrieve.filters import NO_FILTERS, Filters
from flare.text import char_content_words
from flare.types import Hit, Passage


class MemoryRetriever:
    """Scores passages by the share of query content words they contain.

    It passes :class:`~flare.testing.contracts.RetrieverContract`, updates included.
    """

    name = "memory"
    supports_updates = True

    def __init__(self, passages: Iterable[Passage]) -> None:
        self.passages = list(passages)
        self.queries: list[tuple[str, Filters]] = []

    def check_filters(self, filters: Filters) -> None:
        """Filters may name any meta field some passage has; another raises :class:`FilterError`."""
        check_fields(filters, dict.fromkeys(key for p in self.passages for key in p.meta), where="this retriever")

    def add(self, passages: Iterable[Passage]) -> None:
        """Insert passages; one with an existing id replaces it (a changed ACL applies at once)."""
        new = {p.id: p for p in passages}
        self.passages = [p for p in self.passages if p.id not in new] + list(new.values())

    def delete(self, ids: Iterable[str]) -> None:
        """Remove passages by id; unknown ids are ignored."""
        gone = set(ids)
        self.passages = [p for p in self.passages if p.id not in gone]

    def search(self, query: str, *, k: int, filters: Filters = NO_FILTERS) -> list[Hit]:
        if k < 0:
            raise InputError(f"k must be 0 or more, got {k}", "ask for k=5 or so")
        self.check_filters(filters)
        self.queries.append((query, filters))
        words = char_content_words(query)
        if not words:
            return []
        hits = []
        for p in self.passages:
            if not filters.matches(p.meta):
                continue
            overlap = len(words & char_content_words(f"{p.title} {p.text}"))
            if overlap:
                hits.append(Hit(p, overlap / len(words)))
        hits.sort(key=lambda h: (-h.score, h.passage.id))
        return hits[:k]
