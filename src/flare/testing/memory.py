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

from flare.retrieve.filters import Filters
from flare.types import Hit, Passage
from flare.verify.citations import content_words


class MemoryRetriever:
    """Scores passages by the share of query content words they contain."""

    name = "memory"

    def __init__(self, passages: Iterable[Passage]) -> None:
        self.passages = list(passages)
        self.queries: list[tuple[str, Filters | None]] = []

    def search(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        self.queries.append((query, filters))
        words = content_words(query)
        if not words:
            return []
        hits = []
        for p in self.passages:
            if filters is not None and not filters.matches(p.meta):
                continue
            overlap = len(words & content_words(f"{p.title} {p.text}"))
            if overlap:
                hits.append(Hit(p, overlap / len(words)))
        hits.sort(key=lambda h: (-h.score, h.passage.id))
        return hits[:k]
