"""Filter values written the Chinese way (2026年, 二〇二六) are numbers against number fields, in the
reference semantics and inside the real index alike; against text fields they stay text."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pytest

from flare.retrieve.filters import Filters
from flare.retrieve.tantivy_index import TantivyRetriever
from flare.types import Passage

PASSAGES = [
    Passage("t26", "2026年境内出差审批通过后5个工作日内付款。", "差旅-2026-04", {"year": 2026, "label": "2026年"}),
    Passage("t25", "2025年境内出差审批通过后15个工作日内付款。", "差旅-2025-02", {"year": 2025, "label": "2025年"}),
]


@pytest.mark.parametrize(
    ("expr", "ids"),
    [
        ("year=2026年", {"t26"}),
        ("year=二〇二六", {"t26"}),
        ("year=二〇二六年", {"t26"}),
        ("year>=二〇二五年", {"t25", "t26"}),
        ("year<2026年", {"t25"}),
        ("label=2026年", {"t26"}),  # a text field compares the text itself
        ("year=境内", set()),
    ],
)
def test_chinese_number_forms(make_index: Callable[[Iterable[Passage]], TantivyRetriever], expr: str,
                              ids: set[str]) -> None:
    flt = Filters.parse([expr])
    assert {p.id for p in PASSAGES if flt.matches(p.meta)} == ids
    index = make_index(PASSAGES)
    assert {h.passage.id for h in index.search("境内出差付款", k=5, filters=flt)} == ids
