"""Hybrid retrieval: BM25 and dense rankings fused with reciprocal-rank fusion (RRF).

BM25 finds rare names and numbers exactly; dense retrieval finds paraphrases. RRF combines the two
rankings by rank alone (``score = Σ 1 / (rrf_k + rank)``), so the incomparable score scales of the
two never need calibrating. ``rrf_k=60`` is the constant of Cormack et al. (2009), also Milvus's
default. Both retrievers get the *same* filters, each applying them inside its own search, so the
fused list can only hold passages both would allow (requirement C1).

A hybrid index directory holds ``bm25/`` (tantivy) and ``dense/`` (vectors) side by side.

Example::

    build_hybrid_index(load_corpus("docs/"), "hybrid-index")
    hybrid = HybridRetriever.open("hybrid-index")
    hits = hybrid.search("who proposed FLARE", k=5, filters=Filters.parse(["acl=public"]))
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flare.errors import CorpusIndexError, InputError, RetrieverError
from flare.retrieve.base import Retriever
from flare.retrieve.dense import DenseRetriever, Embedder, build_dense_index
from flare.retrieve.filters import NO_FILTERS, Filters
from flare.types import Hit, Passage

__all__ = ["HybridIndexInfo", "HybridRetriever", "build_hybrid_index", "rrf"]

RRF_K = 60
BM25_DIR, DENSE_DIR = "bm25", "dense"


def rrf(rankings: Iterable[list[Hit]], *, k: int, rrf_k: int = RRF_K) -> list[Hit]:
    """Fuse rankings by reciprocal rank; ties are broken by passage id (stable across runs)."""
    scores: dict[str, float] = {}
    passages: dict[str, Passage] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, start=1):
            pid = hit.passage.id
            scores[pid] = scores.get(pid, 0.0) + 1.0 / (rrf_k + rank)
            passages.setdefault(pid, hit.passage)
    order = sorted(scores, key=lambda pid: (-scores[pid], pid))[:k]
    return [Hit(passages[pid], scores[pid]) for pid in order]


class HybridRetriever:
    """Any two retrievers (normally BM25 and dense) fused with RRF.

    Each side is asked for ``depth`` hits (default ``max(4k, 20)``): fusing deeper lists lets a
    passage that both rank moderately beat one that only one side ranks first.
    """

    name = "hybrid"

    def __init__(self, lexical: Retriever, dense: Retriever, *, rrf_k: int = RRF_K, depth: int | None = None) -> None:
        self.lexical = lexical
        self.dense = dense
        self.rrf_k = rrf_k
        self.depth = depth

    @property
    def supports_updates(self) -> bool:
        """True when both sides can ``add`` and ``delete`` (tantivy indexes cannot yet)."""
        return all(getattr(s, "supports_updates", False) for s in (self.lexical, self.dense))

    @classmethod
    def open(cls, index_dir: str | Path, *, embedder: Embedder | None = None) -> HybridRetriever:
        """Open a directory made by :func:`build_hybrid_index` (``bm25/`` and ``dense/``)."""
        from flare.retrieve.tantivy_index import TantivyRetriever

        root = Path(index_dir)
        if not (root / BM25_DIR).is_dir() or not (root / DENSE_DIR).is_dir():
            raise CorpusIndexError(
                f"{root}: a hybrid index needs {BM25_DIR}/ and {DENSE_DIR}/ inside",
                "build it with: flare index CORPUS --index hybrid:DIR",
            )
        return cls(TantivyRetriever(root / BM25_DIR), DenseRetriever(root / DENSE_DIR, embedder=embedder))

    def search(self, query: str, *, k: int, filters: Filters = NO_FILTERS) -> list[Hit]:
        """The best ``k`` fused passages; both sides search under the same ``filters``."""
        if k < 0:
            raise InputError(f"k must be 0 or more, got {k}", "ask for k=5 or so")
        self.check_filters(filters)
        if k == 0:
            return []
        depth = self.depth or max(4 * k, 20)
        lexical = self.lexical.search(query, k=depth, filters=filters)
        dense = self.dense.search(query, k=depth, filters=filters)
        return rrf([lexical, dense], k=k, rrf_k=self.rrf_k)

    def check_filters(self, filters: Filters) -> None:
        """Both sides must honour ``filters`` (each raises :class:`~flare.errors.FilterError` if not)."""
        self.lexical.check_filters(filters)
        self.dense.check_filters(filters)

    def add(self, passages: Iterable[Passage]) -> None:
        """Insert or replace passages on both sides (each must have an ``add`` method)."""
        items = list(passages)
        for side in (self.lexical, self.dense):
            _updater(side, "add")(items)

    def delete(self, ids: Iterable[str]) -> None:
        """Remove passages by id on both sides."""
        gone = list(ids)
        for side in (self.lexical, self.dense):
            _updater(side, "delete")(gone)


def _updater(side: Retriever, method: str) -> Callable[[list[Any]], None]:
    fn = getattr(side, method, None)
    if fn is None or not getattr(side, "supports_updates", False):
        raise RetrieverError(
            f"the {side.name} retriever has no {method}() method",
            "rebuild the index with `flare index` to change its passages",
        )
    return fn  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class HybridIndexInfo:
    """What :func:`build_hybrid_index` wrote."""

    path: Path
    count: int
    seconds: float


def build_hybrid_index(
    passages: Iterable[Passage], index_dir: str | Path, *, embedder: Embedder | None = None
) -> HybridIndexInfo:
    """Build ``bm25/`` and ``dense/`` under ``index_dir`` (each swapped into place when done)."""
    from flare.retrieve.tantivy_index import build_index

    started = time.perf_counter()
    root = Path(index_dir)
    items = list(passages)
    info = build_index(items, root / BM25_DIR)
    build_dense_index(items, root / DENSE_DIR, embedder=embedder)
    return HybridIndexInfo(root, info.count, time.perf_counter() - started)
