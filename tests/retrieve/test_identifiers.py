"""A question that names a product code or document number finds the passage stating exactly it first."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pytest

from flare.retrieve.filters import Filters
from flare.retrieve.tantivy_index import TantivyRetriever
from flare.types import Passage

Make = Callable[[Iterable[Passage]], TantivyRetriever]

# Each tempting passage repeats the identifier's parts ("FX", "210") without the identifier itself,
# so a search on parts alone ranks it first.
PASSAGES = [
    Passage("fx210", "The FX-210 sensor runs for 24 months on one battery.", "FX-210", {"acl": ["staff"]}),
    Passage("fx-tempt", "How long does an FX battery last? The FX-200 battery lasts 210 days; FX units with "
            "210 battery cells last long.", "FX battery", {"acl": ["staff"]}),
    Passage("gbt", "Citations follow GB/T 7714-2015 in every report.", "Citation rules", {"acl": ["staff"]}),
    Passage("gbt-tempt", "GB rules: GB/T 7714-2005 was replaced in 2015; see GB/T rules 7714 and 2015 notes.",
            "GB notes", {"acl": ["staff"]}),
    Passage("trip", "文件编号：差旅-2026-03。境内出差须在出发前至少3个工作日提交申请。", "差旅-2026-03 境内出差审批",
            {"acl": ["staff"]}),
    Passage("trip-tempt", "差旅-2025-03：2026年起废止。按照03号文件，出差要提前多久申请？2026年出差须提前申请，"
            "差旅申请规定见03号文件。", "差旅-2025-03 出差申请（已废止）", {"acl": ["staff"]}),
    Passage("trip-hidden", "文件编号：差旅-2026-03（财务版）。出差补贴的内部核算方法。", "差旅-2026-03 财务版",
            {"acl": ["finance"]}),
]


@pytest.fixture
def index(make_index: Make) -> TantivyRetriever:
    return make_index(PASSAGES)


@pytest.mark.parametrize(
    ("named", "parts", "wanted"),
    [
        ("How long does the FX-210 battery last?", "How long does the FX 210 battery last?", "fx210"),
        ("Which rules does GB/T 7714-2015 set?", "Which rules does GB T 7714 2015 set?", "gbt"),
        ("差旅-2026-03 规定提前多久申请？", "差旅 2026 03 规定提前多久申请？", "trip"),
        ("按照差旅-2026-03，出差要提前多久申请？", "按照差旅 2026 03，出差要提前多久申请？", "trip"),
    ],
)
def test_the_named_identifier_ranks_its_passage_first(index: TantivyRetriever, named: str, parts: str,
                                                       wanted: str) -> None:
    staff = Filters.parse(["acl=staff"])
    assert index.search(named, k=3, filters=staff)[0].passage.id == wanted
    # The same words without the identifier favour the tempting passage: the whole token decides.
    assert index.search(parts, k=3, filters=staff)[0].passage.id != wanted


def test_an_identifier_never_reaches_past_the_filters(index: TantivyRetriever) -> None:
    hits = index.search("差旅-2026-03 财务版", k=5, filters=Filters.parse(["acl=staff"]))
    assert hits and "trip-hidden" not in {h.passage.id for h in hits}
