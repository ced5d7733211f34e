"""Rendering answers, and the reference semantics of narrow-only filters."""

from __future__ import annotations

import pytest

from flare.errors import FilterError
from flare.retrieve.filters import NO_FILTERS, SYMBOLS, Filters, Op, holds
from flare.text import join_words
from flare.types import Answer, Citation, Sentence


def test_render_places_markers_before_the_full_stop_and_lists_sources() -> None:
    a = Answer(
        "q",
        (Sentence("Founded in 2011.", True, (1,)), Sentence("它很好。", True, (1, 2)), Sentence("Bye", False)),
        (Citation(1, "p1", "About", "..."), Citation(2, "p2", "", "...")),
        "end",
        "t",
    )
    assert a.text == "Founded in 2011. 它很好。Bye"
    assert a.render().splitlines() == [
        "Founded in 2011[1]. 它很好[1][2]。Bye",
        "",
        "Sources:",
        "[1] About (p1)",
        "[2] p2 (p2)",
    ]


META = {"acl": ["finance", "hr"], "year": 2026, "score": 0.5, "lang": "en", "draft": False}


@pytest.mark.parametrize(
    ("exprs", "expected"),
    [
        (["acl=finance"], True),
        (["acl=legal"], False),
        (["acl=legal|hr"], True),
        (["year=2026"], True),
        (["year=2026.0"], True),
        (["year>=2025", "year<2027"], True),
        (["year>2026"], False),
        (["score<=0.5"], True),
        (["lang=en"], True),
        (["draft=false"], True),
        (["missing=1"], False),
    ],
)
def test_matches(exprs: list[str], expected: bool) -> None:
    assert Filters.parse(exprs).matches(META) is expected


def test_string_stored_numbers_match_numeric_filters() -> None:
    assert Filters.parse(["year=2026"]).matches({"year": "2026"})


def test_narrow_only_adds_conditions() -> None:
    trusted = Filters.any_of("acl", ["finance"])
    wider = Filters.parse(["acl=finance|public"])
    combined = trusted.narrow(wider)
    assert combined.matches(META)
    assert not combined.matches({"acl": ["public"]})
    assert trusted.narrow(NO_FILTERS) is trusted
    assert not Filters.any_of("acl", []).matches(META)


@pytest.mark.parametrize("bad", ["year", "=2026", "year=", "acl=a||b", "year>>3"])
def test_malformed_filters(bad: str) -> None:
    with pytest.raises(FilterError):
        Filters.parse([bad])


def test_citations_prefer_passages_with_the_distinctive_words() -> None:
    from flare.types import Passage
    from flare.verify.citations import supporting

    docs = [
        Passage("a", "Northwind Labs was founded by Ingrid Solberg in 2011."),
        Passage("b", "Northwind Labs makes the Floe sensor."),
        Passage("c", "Northwind Labs has offices in Bergen."),
    ]
    assert supporting("Northwind Labs was founded by Ingrid Solberg.", docs) == [0]
    assert sorted(supporting("Northwind Labs builds Floe sensors in Bergen.", docs)) == [1, 2]
    assert supporting("Nothing shared here.", docs) == [0, 1, 2]
    assert supporting("anything", []) == []


@pytest.mark.parametrize("op", ["eq", "gte", "gt", "lte", "lt"])
def test_each_operator_is_written_and_compared_in_one_place(op: Op) -> None:
    """SYMBOLS spells an operator, holds() decides it: parsing, printing and matching agree."""
    expr = f"year{SYMBOLS[op]}2025"
    flt = Filters.parse([expr])
    assert str(flt) == expr and flt.conditions[0].op == op
    expected = {"eq": [False, True, False], "gte": [False, True, True], "gt": [False, False, True],
                "lte": [True, True, False], "lt": [True, False, False]}[op]  # fmt: skip
    years = (2024, 2025, 2026)
    assert [holds(op, y, 2025) for y in years] == expected
    assert [flt.matches({"year": y}) for y in years] == expected


def test_answer_sentences_join_like_every_other_text() -> None:
    """Answers, queries and prompts share one joining rule (flare.text.join_words)."""
    a = Answer("q", (Sentence("它很好", True), Sentence("Bye.", True), Sentence("再见。", True)), (), "end", "t")
    assert a.text == join_words(s.text for s in a.sentences) == "它很好 Bye. 再见。"
