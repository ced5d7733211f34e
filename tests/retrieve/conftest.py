"""Shared fixtures for the retrieval tests: small real corpora indexed on disk."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from flare.retrieve.tantivy_index import TantivyRetriever, build_index
from flare.types import Passage

# A small bilingual corpus with typed metadata, one clear topic per passage.
PASSAGES = [
    Passage(
        "volcano",
        "Mount Etna is an active volcano on the east coast of Sicily; its eruptions of lava and ash are frequent.",
        "Mount Etna",
        {"year": 2021, "acl": ["public"], "score": 0.9, "date": "2021-03-01", "draft": False},
    ),
    Passage(
        "volcano-secret",
        "Volcano volcano eruption: internal notes on the lava sensors at the volcano.",
        "Volcano notes",
        {"year": 2026, "acl": ["geology"], "score": 0.2, "date": "2026-01-15", "draft": True},
    ),
    Passage(
        "bread",
        "Sourdough bread is leavened by wild yeast and lactic acid bacteria in a starter.",
        "Sourdough",
        {"year": 2019, "acl": ["public", "kitchen"], "score": 0.5, "date": "2019-07-30"},
    ),
    Passage(
        "beijing",
        "北京大学是中国著名的综合性大学，创办于1898年。",
        "北京大学",
        {"year": 2024, "acl": ["public"], "score": 0.7, "date": "2024-09-01", "draft": False},
    ),
    Passage(
        "flare-zh",
        "FLARE 是一种主动检索增强生成方法：当模型对下一句没有把握时才去检索。",
        "FLARE 方法",
        {"year": 2023, "acl": ["public", "nlp"], "score": 0.8, "date": "2023-05-11"},
    ),
    Passage(
        "emoji",
        "Party planning 🎉 with cake 🍰 and café music ♫ for everyone.",
        "Party 🎉",
        {"year": 2022, "acl": [], "score": 0.1, "date": "2022-12-31", "draft": True},
    ),
]


@pytest.fixture
def make_index(tmp_path: Path) -> Callable[[Iterable[Passage]], TantivyRetriever]:
    """Build an index of the given passages under tmp_path and open it."""
    counter = iter(range(1000))

    def make(passages: Iterable[Passage]) -> TantivyRetriever:
        target = tmp_path / f"index-{next(counter)}"
        build_index(passages, target)
        return TantivyRetriever(target)

    return make


@pytest.fixture(scope="module")
def bm25(tmp_path_factory: pytest.TempPathFactory) -> TantivyRetriever:
    """A read-only index of :data:`PASSAGES`, built once per test module."""
    target = tmp_path_factory.mktemp("bm25") / "index"
    build_index(PASSAGES, target)
    return TantivyRetriever(target)


@pytest.fixture
def passages() -> list[Passage]:
    """The passages of :data:`PASSAGES` (a fresh list per test)."""
    return list(PASSAGES)
