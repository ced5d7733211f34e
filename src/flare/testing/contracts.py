"""Conformance suites every backend must pass, shipped so third-party backends can run them too.

Subclass one in a test module and provide the fixtures it names; every ``test_*`` method then
runs against your backend::

    class TestMyModel(LanguageModelContract):
        @pytest.fixture(scope="class")
        @classmethod
        def lm(cls) -> LanguageModel:
            return MyModel()

    class TestMyRetriever(RetrieverContract):
        @pytest.fixture(scope="class")
        @classmethod
        def make_retriever(cls, tmp_path_factory) -> Callable[[list[Passage]], Retriever]:
            return lambda passages: build_my_index(passages, tmp_path_factory.mktemp("ix"))

The suites check behaviour a caller relies on, never a backend's internals: greedy determinism,
tokens that spell the text, stop handling, declared capabilities (a ``score`` that spells its
continuation where ``supports_scoring`` says so), and for retrievers filters and permissions applied
*inside* the search (a passage that would rank first but fails the filter must neither appear nor
push a permitted passage out of the top k, requirement C1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import ClassVar

import pytest

from flare.errors import FilterError
from flare.lm.base import LanguageModel, declared
from flare.retrieve.base import Retriever
from flare.retrieve.filters import NO_FILTERS, Condition, Filters
from flare.types import Completion, Passage

__all__ = ["CONTRACT_CORPUS", "LanguageModelContract", "RetrieverContract"]

MakeRetriever = Callable[[list[Passage]], Retriever]


class LanguageModelContract:
    """The :class:`~flare.lm.base.LanguageModel` contract. Provide a class-scoped ``lm`` fixture.

    ``logprob_tolerance`` is how far two runs of one prompt may differ in log-probability (0 for
    backends that are bit-for-bit repeatable).
    """

    prompts: ClassVar[tuple[str, ...]] = (
        "Question: What is the capital of France?\nAnswer:",
        "中国的首都是北京。上海是中国的",
        "Write a short poem about the sea:\n",
    )
    max_tokens: ClassVar[int] = 12
    logprob_tolerance: ClassVar[float] = 0.0

    def _check(self, lm: LanguageModel, c: Completion) -> None:
        assert isinstance(c.text, str)
        assert c.finish_reason in ("stop", "length", "sentence")
        if lm.supports_logprobs:
            assert "".join(t.text for t in c.tokens) == c.text
            assert all(t.text for t in c.tokens), "every token must hold whole characters"
            assert all(0.0 < t.prob <= 1.0 and math.isfinite(t.logprob) for t in c.tokens)

    def test_is_a_language_model(self, lm: LanguageModel) -> None:
        assert isinstance(lm, LanguageModel)
        assert isinstance(lm.name, str) and lm.name
        assert isinstance(lm.supports_logprobs, bool)
        assert isinstance(lm.supports_logit_bias, bool)

    def test_declares_its_capabilities(self, lm: LanguageModel) -> None:
        model = declared(lm)
        assert isinstance(model.supports_scoring, bool)
        assert model.chat_template is None or isinstance(model.chat_template, str)
        assert model.continuation is None or isinstance(model.continuation, str)
        assert isinstance(model.max_parallel, int) and model.max_parallel >= 1
        if model.supports_scoring:
            c = model.score(self.prompts[0], " Paris is the capital.")
            assert c.text == " Paris is the capital." and c.generated_tokens == 0
            if lm.supports_logprobs:
                assert "".join(t.text for t in c.tokens) == c.text

    def test_greedy_and_repeatable(self, lm: LanguageModel) -> None:
        for prompt in self.prompts:
            a = lm.complete(prompt, max_tokens=self.max_tokens)
            b = lm.complete(prompt, max_tokens=self.max_tokens)
            self._check(lm, a)
            assert a.text == b.text
            assert [t.text for t in a.tokens] == [t.text for t in b.tokens]
            for x, y in zip(a.tokens, b.tokens, strict=True):
                assert abs(x.logprob - y.logprob) <= self.logprob_tolerance

    def test_max_tokens(self, lm: LanguageModel) -> None:
        prompt = self.prompts[0]
        short = lm.complete(prompt, max_tokens=3)
        self._check(lm, short)
        assert short.generated_tokens <= 3
        assert len(short.tokens) <= 3
        longer = lm.complete(prompt, max_tokens=self.max_tokens)
        assert longer.text.startswith(short.text), "greedy output must extend, not change"
        empty = lm.complete(prompt, max_tokens=0)
        assert (empty.text, empty.tokens, empty.finish_reason) == ("", (), "length")

    def test_stop_sequence_is_trimmed(self, lm: LanguageModel) -> None:
        for prompt in self.prompts:
            base = lm.complete(prompt, max_tokens=self.max_tokens)
            words = [w for w in base.text.split() if len(w) >= 2]
            if len(words) < 2:
                continue
            stop = words[len(words) // 2][:2]
            c = lm.complete(prompt, max_tokens=self.max_tokens, stop=[stop])
            self._check(lm, c)
            assert c.text == base.text[: base.text.index(stop)]
            assert c.finish_reason == "stop"
            return
        pytest.skip("no prompt produced text long enough to place a stop sequence")

    def test_stop_when_ends_at_a_token(self, lm: LanguageModel) -> None:
        prompt = self.prompts[-1]
        base = lm.complete(prompt, max_tokens=self.max_tokens)
        cut = max(1, len(base.text) // 2)
        seen: list[str] = []

        def enough(text: str) -> bool:
            seen.append(text)
            return len(text) >= cut

        c = lm.complete(prompt, max_tokens=self.max_tokens, stop_when=enough)
        self._check(lm, c)
        assert base.text.startswith(c.text)
        assert c.finish_reason == "sentence" and len(c.text) >= cut
        assert all(len(s) < cut for s in seen[:-1]), "generation must stop at the first yes"
        if lm.supports_logprobs:
            assert len(c.text) - len(c.tokens[-1].text) < cut

    def test_count_tokens(self, lm: LanguageModel) -> None:
        one, two = lm.count_tokens("Paris"), lm.count_tokens("Paris is the capital of France.")
        assert 1 <= one < two
        assert lm.count_tokens("") == 0

    def test_logit_bias_pushes_a_token(self, lm: LanguageModel) -> None:
        if not lm.supports_logit_bias:
            pytest.skip("backend has no logit bias")
        c = lm.complete(self.prompts[0], max_tokens=2, logit_bias={"[": 100.0})
        assert c.text.lstrip().startswith("[")


CONTRACT_CORPUS: tuple[Passage, ...] = (
    Passage("paris", "Paris is the capital and largest city of France, on the Seine.", "Paris",
            {"acl": ["public"], "year": 2020, "lang": "en", "rating": 4.5, "draft": False}),
    Passage("berlin", "Berlin is the capital of Germany and its largest city.", "Berlin",
            {"acl": ["public"], "year": 2019, "lang": "en", "rating": 4.0, "draft": False}),
    Passage("tokyo", "Tokyo is the capital of Japan and the seat of its government.", "Tokyo",
            {"acl": ["public"], "year": 2018, "lang": "en", "rating": 3.5, "draft": False}),
    Passage("eiffel", "The Eiffel Tower, built by Gustave Eiffel's company in 1889, stands in "
            "Paris.", "Eiffel Tower", {"acl": ["public", "hr"], "year": 2021, "lang": "en"}),
    Passage("memo", "What is the capital of France? The capital of France is Paris (confidential).",
            "The capital of France", {"acl": ["finance"], "year": 2024, "lang": "en", "draft": True}),
    Passage("salaries", "Paris office salaries and the capital budget of France for HR.",
            "HR salaries", {"acl": ["hr"], "year": 2023, "lang": "en", "rating": 1.0}),
    Passage("pku", "北京大学是中国著名的高等学府，位于北京市海淀区。", "北京大学",
            {"acl": ["public"], "year": 2021, "lang": "zh"}),
    Passage("shanghai", "上海是中国最大的经济中心城市，也是重要的港口。", "上海",
            {"acl": ["public"], "year": 2022, "lang": "zh"}),
    Passage("dessert", "Crème brûlée is a dessert; naïve café owners in Zürich serve it 🍮.",
            "Crème brûlée", {"acl": ["public"], "year": 2022, "lang": "fr", "tags": ["café"]}),
    Passage("photo", "Photosynthesis converts light energy into chemical energy in plants.",
            "Photosynthesis", {"acl": ["public"], "lang": "en"}),
    Passage("cell", "The mitochondrion is the powerhouse of the cell and makes ATP.",
            "Mitochondrion", {"acl": [], "year": 2017, "lang": "en"}),
)  # fmt: skip
"""A small bilingual corpus; ``memo`` and ``salaries`` are the passages a filter must hide."""

PUBLIC = Filters.any_of("acl", ["public"])


class RetrieverContract:
    """The :class:`~flare.retrieve.base.Retriever` contract over :data:`CONTRACT_CORPUS`.

    Provide a class-scoped ``make_retriever`` fixture: a function that indexes a list of passages
    and returns a retriever over them. ``check_filters`` must accept filters on the corpus's meta
    fields and refuse others, and ``search`` must refuse what ``check_filters`` refuses.
    ``lexical`` says whether a query sharing no word with any passage finds nothing (true for
    BM25, false for dense retrieval, which always has neighbours). Update tests run when the
    retriever says ``supports_updates = True`` and has ``add(passages)`` (insert or replace by
    id) and ``delete(ids)``.
    """

    lexical: ClassVar[bool] = True

    @pytest.fixture(scope="class")
    @classmethod
    def retriever(cls, make_retriever: MakeRetriever) -> Retriever:
        return make_retriever(list(CONTRACT_CORPUS))

    def test_is_a_retriever(self, retriever: Retriever) -> None:
        assert isinstance(retriever, Retriever)
        assert isinstance(retriever.name, str) and retriever.name

    def test_ranking_sanity(self, retriever: Retriever) -> None:
        hits = retriever.search("Which city is the capital of Germany?", k=3)
        assert hits and hits[0].passage.id == "berlin"
        hits = retriever.search("What does the mitochondrion of a cell make?", k=3)
        assert hits[0].passage.id == "cell"

    def test_k_and_order(self, retriever: Retriever) -> None:
        hits = retriever.search("capital city", k=2)
        assert len(hits) <= 2
        assert retriever.search("capital city", k=0) == []
        many = retriever.search("capital city", k=50)
        scores = [h.score for h in many]
        assert scores == sorted(scores, reverse=True)
        assert len({h.passage.id for h in many}) == len(many)

    def test_filter_inside_the_search(self, retriever: Retriever) -> None:
        query = "What is the capital of France?"
        assert retriever.search(query, k=1)[0].passage.id == "memo"  # the passage to hide
        hits = retriever.search(query, k=1, filters=PUBLIC)
        assert [h.passage.id for h in hits] == ["paris"], "the hidden memo pushed Paris out"
        for h in retriever.search(query, k=20, filters=PUBLIC):
            assert "public" in h.passage.meta["acl"]

    def test_acl_any_of(self, retriever: Retriever) -> None:
        hr_only = Filters.any_of("acl", ["hr"])
        hr = retriever.search("Paris salaries capital France", k=20, filters=hr_only)
        assert {h.passage.id for h in hr} <= {"salaries", "eiffel"} and hr
        assert retriever.search("Paris", k=5, filters=Filters.any_of("acl", [])) == []
        both = Filters.any_of("acl", ["finance", "hr"])
        ids = {h.passage.id for h in retriever.search("capital of France", k=20, filters=both)}
        assert "memo" in ids and "paris" not in ids

    @pytest.mark.parametrize(
        "exprs",
        [["year>=2021"], ["year<2020"], ["year=2021"], ["year=2021|2018"], ["lang=zh"],
         ["rating>3.9"], ["draft=true"], ["draft=0"], ["lang>=fr"], ["tags=café"],
         ["year=2021", "acl=public"], ["year>2019", "lang=en", "acl=public|hr"]],
    )  # fmt: skip
    def test_filters_agree_with_reference(self, retriever: Retriever, exprs: list[str]) -> None:
        filters = Filters.parse(exprs)
        hits = retriever.search("capital city Paris 北京 café energy cell", k=20, filters=filters)
        for h in hits:
            assert filters.matches(h.passage.meta), f"{h.passage.id} fails {filters}"
        allowed = [p for p in CONTRACT_CORPUS if filters.matches(p.meta)]
        if not self.lexical:  # a dense retriever ranks every allowed passage
            assert {h.passage.id for h in hits} == {p.id for p in allowed}

    def test_string_and_number_coercion(self, retriever: Retriever) -> None:
        as_text = Filters((Condition("year", "eq", ("2021",)),))  # a number field, a text value
        ids = {h.passage.id for h in retriever.search("capital Paris 北京", k=20, filters=as_text)}
        assert ids and ids <= {"eiffel", "pku"}

    def test_nothing_matches(self, retriever: Retriever) -> None:
        assert retriever.search("capital", k=5, filters=Filters.parse(["year>=3000"])) == []
        assert retriever.search("", k=5) == []
        assert retriever.search("   ", k=5) == []
        if self.lexical:
            assert retriever.search("qwxzv zzyzx", k=5) == []

    def test_unknown_filter_field(self, retriever: Retriever) -> None:
        unknown = Filters.parse(["colour=red"])
        for k in (3, 0):  # even a search that asks for nothing must refuse the filter
            with pytest.raises(FilterError, match="colour"):
                retriever.search("capital", k=k, filters=unknown)
        with pytest.raises(FilterError, match="colour"):
            retriever.search("", k=3, filters=PUBLIC.narrow(unknown))

    def test_check_filters(self, retriever: Retriever) -> None:
        retriever.check_filters(NO_FILTERS)  # "no filter" is the empty Filters, the search default
        assert retriever.search("capital", k=3) == retriever.search("capital", k=3, filters=Filters())
        known = Filters.parse(["year>=2021", "lang=en|zh", "acl=public", "rating<5", "draft=false", "tags=café"])
        retriever.check_filters(known)
        retriever.check_filters(Filters.any_of("acl", []))  # matches nothing, but is a valid filter
        retriever.check_filters(Filters.parse(["year>=3000"]))
        with pytest.raises(FilterError, match="colour") as info:
            retriever.check_filters(known.narrow(Filters.parse(["colour=red"])))
        assert info.value.hint, "the error must say what to do"

    def test_chinese(self, retriever: Retriever) -> None:
        hits = retriever.search("北京大学在哪里？", k=2)
        assert hits[0].passage.id == "pku"
        hits = retriever.search("上海 港口", k=1, filters=Filters.parse(["lang=zh"]))
        assert [h.passage.id for h in hits] == ["shanghai"]

    def test_unicode_round_trip(self, retriever: Retriever) -> None:
        hits = retriever.search("crème brûlée café Zürich", k=1)
        assert hits[0].passage == CONTRACT_CORPUS[8]

    def test_query_is_plain_text(self, retriever: Retriever) -> None:
        for query in ["title:Paris AND (", '" or 1==1 or "', "acl:finance", "\\", "{{x}} ${y}"]:
            for h in retriever.search(query, k=5, filters=PUBLIC):
                assert "public" in h.passage.meta["acl"]

    def test_updates_and_deletes(self, make_retriever: MakeRetriever) -> None:
        r = make_retriever(list(CONTRACT_CORPUS))
        add, delete = getattr(r, "add", None), getattr(r, "delete", None)
        if not getattr(r, "supports_updates", False) or add is None or delete is None:
            pytest.skip(f"{r.name} has no add()/delete() update API")
        new = Passage("rome", "Rome is the capital of Italy.", "Rome", {"acl": ["public"]})
        add([new])
        assert r.search("capital of Italy", k=1, filters=PUBLIC)[0].passage == new
        revoked = Passage("paris", CONTRACT_CORPUS[0].text, "Paris", {"acl": ["finance"]})
        add([revoked])  # replacing a passage must take effect at once (a revoked permission)
        ids = [h.passage.id for h in r.search("capital of France", k=20, filters=PUBLIC)]
        assert "paris" not in ids
        delete(["pku", "no-such-id"])
        assert "pku" not in [h.passage.id for h in r.search("北京大学 北京 中国", k=100)]
