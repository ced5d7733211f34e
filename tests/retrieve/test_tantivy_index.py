"""Searching the embedded BM25 retriever: ranking, languages, query safety, filters."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from flare.errors import FilterError, InputError, UnknownFieldError
from flare.retrieve.analyzers import analyze
from flare.retrieve.base import Retriever
from flare.retrieve.filters import Condition, Filters, Op
from flare.retrieve.tantivy_index import TantivyRetriever
from flare.types import Passage

MakeIndex = Callable[[Iterable[Passage]], TantivyRetriever]


def ids(bm25: TantivyRetriever, query: str, *exprs: str, k: int = 10) -> list[str]:
    filters = Filters.parse(exprs)
    return [h.passage.id for h in bm25.search(query, k=k, filters=filters)]


# ---------------------------------------------------------------- ranking


def test_is_a_retriever_named_bm25(bm25: TantivyRetriever, passages: list[Passage]) -> None:
    assert isinstance(bm25, Retriever)
    assert bm25.name == "bm25"
    assert len(bm25) == len(passages)


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("Where is Mount Etna?", "volcano"),
        ("how is sourdough bread leavened", "bread"),
        ("北京大学创办于哪一年", "beijing"),
        ("北京", "beijing"),
        ("什么是主动检索", "flare-zh"),
        ("FLARE 方法", "flare-zh"),
        ("café cake 🎉", "emoji"),
    ],
)
def test_a_query_about_x_ranks_x_first(bm25: TantivyRetriever, query: str, best: str) -> None:
    assert ids(bm25, query)[0] == best


def test_hits_are_best_first_with_at_most_k(bm25: TantivyRetriever) -> None:
    hits = bm25.search("volcano lava eruption", k=1)
    assert len(hits) == 1
    hits = bm25.search("volcano lava eruption bread", k=10)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    assert {h.passage.id for h in hits} == {"volcano", "volcano-secret", "bread"}


def test_passages_round_trip_exactly(bm25: TantivyRetriever, passages: list[Passage]) -> None:
    for passage in passages:
        assert bm25.get(passage.id) == passage
    assert bm25.get("missing") is None
    hit = bm25.search("party planning", k=1)[0]
    assert hit.passage == passages[-1]


@pytest.mark.parametrize("query", ["", "   ", "the of and", "🎉🍰", "，。"])
def test_queries_without_tokens_return_nothing(bm25: TantivyRetriever, query: str) -> None:
    assert bm25.search(query, k=5) == []


@pytest.mark.parametrize("query", ["title:foo AND (", "*", "volcano) OR (*", 'acl:geology "', "year:[0 TO 9999]"])
def test_query_syntax_in_the_text_is_just_words(bm25: TantivyRetriever, query: str) -> None:
    hits = bm25.search(query, k=10)
    if "volcano" in query:
        assert [h.passage.id for h in hits] == ids(bm25, "volcano")
    else:
        assert hits == []


def test_scores_agree_with_an_independent_bm25(make_index: MakeIndex) -> None:
    # Documents shorter than ~40 tokens, where tantivy stores document lengths exactly.
    texts = ["red apple pie", "green apple", "red red car fast", "blue sky", "apple apple apple"]
    bm25 = make_index([Passage(f"d{i}", t) for i, t in enumerate(texts)])
    docs = [analyze(t) for t in texts]
    avgdl = sum(map(len, docs)) / len(docs)

    def score(query: list[str], doc: list[str], k1: float = 1.2, b: float = 0.75) -> float:
        total = 0.0
        for term in query:
            n = sum(term in d for d in docs)
            idf = math.log(1 + (len(docs) - n + 0.5) / (n + 0.5))
            tf = doc.count(term)
            total += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / avgdl))
        return total

    for query in ["apple", "red apple", "fast car sky"]:
        hits = bm25.search(query, k=10)
        assert hits
        for hit in hits:
            want = score(analyze(query), docs[int(hit.passage.id[1:])])
            assert hit.score == pytest.approx(want, rel=1e-4)


def test_filters_do_not_change_scores(bm25: TantivyRetriever) -> None:
    plain = {h.passage.id: h.score for h in bm25.search("volcano lava", k=10)}
    filtered = bm25.search("volcano lava", k=10, filters=Filters.parse(["acl=public"]))
    assert filtered and all(h.score == plain[h.passage.id] for h in filtered)


def test_a_very_long_query_is_capped_not_refused(bm25: TantivyRetriever) -> None:
    query = " ".join(f"word{i}" for i in range(5000)) + " volcano"
    assert isinstance(bm25.search(query, k=3), list)
    assert ids(bm25, "volcano " + query)[0] == "volcano-secret"


def test_k_zero_and_negative(bm25: TantivyRetriever) -> None:
    assert bm25.search("volcano", k=0) == []
    with pytest.raises(InputError):
        bm25.search("volcano", k=-1)


# ---------------------------------------------------------------- filters


def test_filter_excludes_the_top_ranked_passage(bm25: TantivyRetriever) -> None:
    # "volcano-secret" repeats the query words and ranks first without the filter; a caller
    # without the "geology" group must still get the permitted passage, even with k=1.
    assert ids(bm25, "volcano lava")[0] == "volcano-secret"
    assert ids(bm25, "volcano lava", "acl=public", k=1) == ["volcano"]
    acl = Filters.any_of("acl", ["public", "kitchen"])
    assert [h.passage.id for h in bm25.search("volcano lava", k=1, filters=acl)] == ["volcano"]


@pytest.mark.parametrize(
    ("exprs", "expected"),
    [
        (["acl=geology"], {"volcano-secret"}),
        (["acl=kitchen|geology"], {"volcano-secret", "bread"}),
        (["acl=public"], {"volcano", "bread", "beijing", "flare-zh"}),
        (["year=2021"], {"volcano"}),
        (["year=2021|2019|1900"], {"volcano", "bread"}),
        (["year>=2023"], {"volcano-secret", "beijing", "flare-zh"}),
        (["year>2023"], {"volcano-secret", "beijing"}),
        (["year<2021"], {"bread"}),
        (["year<=2021"], {"volcano", "bread"}),
        (["year=2021.0"], {"volcano"}),
        (["year=2021.5"], set()),
        (["score>0.5", "score<=0.8"], {"beijing", "flare-zh"}),
        (["score>=0.9"], {"volcano"}),
        (["score=0.2"], {"volcano-secret"}),
        (["date>=2023-01-01"], {"volcano-secret", "beijing", "flare-zh"}),
        (["date<2021-03-01"], {"bread"}),
        (["date<=2021-03-01"], {"volcano", "bread"}),
        (["draft=true"], {"volcano-secret", "emoji"}),
        (["draft=false"], {"volcano", "beijing"}),
        (["draft=0"], {"volcano", "beijing"}),
        (["draft>false"], {"volcano-secret", "emoji"}),
        (["acl=public", "year>=2022"], {"beijing", "flare-zh"}),
        (["year=abc"], set()),
    ],
)
def test_every_filter_kind(
    bm25: TantivyRetriever, passages: list[Passage], exprs: list[str], expected: set[str]
) -> None:
    everything = "volcano lava bread 北京 flare party"
    assert set(ids(bm25, everything, *exprs)) == expected
    filters = Filters.parse(exprs)
    assert expected == {p.id for p in passages if filters.matches(p.meta)}


def test_string_field_matches_numbers_written_as_filters(make_index: MakeIndex) -> None:
    bm25 = make_index(
        [
            Passage("s1", "report", meta={"year": "2026", "tag": "1.5"}),
            Passage("s2", "report", meta={"year": "2025", "tag": "x"}),
        ]
    )
    assert ids(bm25, "report", "year=2026") == ["s1"]
    assert ids(bm25, "report", "tag=1.5") == ["s1"]
    assert ids(bm25, "report", "year>=2026") == ["s1"]
    int_year = Filters((Condition("year", "eq", (2026,)),))
    assert [h.passage.id for h in bm25.search("report", k=5, filters=int_year)] == ["s1"]


def test_number_field_matches_a_number_written_as_a_string(make_index: MakeIndex) -> None:
    bm25 = make_index([Passage("n", "report", meta={"year": 2026, "ratio": 0.5})])
    as_text = Filters((Condition("year", "eq", ("2026",)), Condition("ratio", "gte", ("0.5",))))
    assert [h.passage.id for h in bm25.search("report", k=5, filters=as_text)] == ["n"]


def test_an_empty_group_list_matches_nothing(bm25: TantivyRetriever) -> None:
    assert bm25.search("volcano", k=5, filters=Filters.any_of("acl", [])) == []


def test_unknown_filter_field_lists_the_indexed_fields_in_the_hint(bm25: TantivyRetriever) -> None:
    with pytest.raises(UnknownFieldError) as err:
        bm25.search("volcano", k=5, filters=Filters.parse(["product=x"]))
    assert "'product'" in err.value.message
    assert "acl" not in err.value.message  # the server shows callers the message only
    assert "acl, date, draft, score, year" in err.value.hint
    with pytest.raises(FilterError):  # also when the query itself has no tokens
        bm25.search("", k=5, filters=Filters.parse(["product=x"]))


def test_huge_numbers_in_filters_do_not_break_int_ranges(make_index: MakeIndex) -> None:
    bm25 = make_index([Passage("a", "x", meta={"n": -5}), Passage("b", "x", meta={"n": 7})])
    assert set(ids(bm25, "x", f"n<{10**30}")) == {"a", "b"}
    assert ids(bm25, "x", f"n>{10**30}") == []
    assert set(ids(bm25, "x", f"n>-{10**30}")) == {"a", "b"}
    assert ids(bm25, "x", f"n={10**30}") == []


def test_passages_missing_a_field_never_match_it(make_index: MakeIndex) -> None:
    bm25 = make_index([Passage("with", "x", meta={"year": 1}), Passage("without", "x")])
    assert ids(bm25, "x", "year>=0") == ["with"]
    assert set(ids(bm25, "x")) == {"with", "without"}


def _random_meta(rng: random.Random) -> dict[str, Any]:
    candidates: dict[str, Any] = {
        "year": rng.randint(2015, 2026),
        "score": rng.choice([0.0, 0.25, 0.5, 0.75, 1.0]),
        "date": f"202{rng.randint(0, 5)}-0{rng.randint(1, 9)}-01",
        "acl": rng.sample(["hr", "finance", "public", "legal"], rng.randint(0, 3)),
        "flag": rng.random() < 0.5,
        "code": str(rng.randint(1, 5)),
        "sizes": [rng.randint(1, 10) for _ in range(rng.randint(0, 3))],
    }
    return {k: v for k, v in candidates.items() if rng.random() < 0.85}


def _random_condition(rng: random.Random) -> Condition:
    field = rng.choice(["year", "score", "date", "acl", "flag", "code", "sizes"])
    ops: list[Op] = ["eq", "eq", "gte", "gt", "lte", "lt"]
    op = rng.choice(ops)
    pools: dict[str, list[Any]] = {
        "year": [2014, 2018, 2020, 2026, "2020", 2020.0, 2020.5],
        "score": [0, 0.25, 0.5, "0.75", 1, True],
        "date": ["2021-05-01", "2023", "2025-09-01", 2022],
        "acl": ["hr", "finance", "public", "nobody"],
        "flag": [True, False, "true", 0, 1, "maybe"],
        "code": [1, 3, "5", 2.0, "0"],
        "sizes": [1, 5, 10, "7", 11],
    }
    pool = pools[field]
    count = rng.randint(0, 3) if op == "eq" else 1
    return Condition(field, op, tuple(rng.choice(pool) for _ in range(count)))


def test_filtered_search_agrees_with_filters_matches(make_index: MakeIndex) -> None:
    rng = random.Random(20230506)
    passages = [Passage(f"p{i}", f"common words {i}", meta=_random_meta(rng)) for i in range(80)]
    bm25 = make_index(passages)
    for _ in range(300):
        filters = Filters(tuple(_random_condition(rng) for _ in range(rng.randint(1, 2))))
        got = {h.passage.id for h in bm25.search("common", k=1000, filters=filters)}
        want = {p.id for p in passages if filters.matches(p.meta)}
        assert got == want, str(filters)
