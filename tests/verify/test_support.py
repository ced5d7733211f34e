"""The support checker on its own: claims, numbers, names, Chinese words, citations and lift."""

from __future__ import annotations

import math

import pytest

from flare.text import numbers, repeated_ngram, words
from flare.types import Passage, TokenLogprob
from flare.verify.support import Thresholds, check, claim_lift, claims, exemplar_leaks, subject

POLICY = Passage("p1", "Travel expenses are reimbursed within ten working days of submitting receipts.",
                 "Travel policy 2026")  # fmt: skip
FOUNDER = Passage("p2", "Northwind Labs was founded in 1999 by Ingrid Solberg in Tromsø.", "Northwind Labs")
LAPTOP = Passage("p3", "Every employee receives a laptop that is replaced after four years.", "Equipment")
ZH = Passage("z1", "2026年境内差旅的报销须在十个工作日内完成，超过期限需部门负责人审批。", "差旅报销办法")


def test_numbers_are_compared_by_value_in_words_digits_and_chinese() -> None:
    assert [n.value for n in numbers("ten, 10, 十, 1,642, twenty-five, 3 million, 二〇二六, 一百零五")] == [
        10, 10, 10, 1642, 25, 3_000_000, 2026, 105,
    ]
    assert numbers("一起统一") == []  # a lone numeral inside a word is not a number
    assert check("Travel expenses are reimbursed within 10 working days.", [POLICY]).label == "supported"
    assert check("报销须在10个工作日内完成。", [ZH]).label == "supported"


def test_a_wrong_number_makes_the_sentence_fail_and_is_the_unsupported_span() -> None:
    v = check("Northwind Labs reimburses travel expenses within 3 months.", [POLICY, FOUNDER])
    assert not v.passes and v.label == "partial"
    assert v.unsupported == ("3 months",)
    v = check("报销须在三个月内完成。", [ZH])
    assert not v.passes and v.unsupported == ("三个月",)


def test_a_name_no_passage_contains_fails_even_when_every_other_word_is_found() -> None:
    v = check("Northwind Labs was founded in 1999 by Erik Dahl.", [FOUNDER])
    assert v.label == "partial" and v.unsupported == ("Erik Dahl",)


def test_citations_are_the_fewest_passages_that_back_the_sentence() -> None:
    passages = [LAPTOP, POLICY, FOUNDER]
    v = check("Ingrid Solberg founded Northwind Labs in 1999.", passages)
    assert v.label == "supported" and v.cited == (2,)
    v = check("Northwind Labs was founded in 1999, and laptops are replaced after four years.", passages)
    assert v.label == "supported" and set(v.cited) == {0, 2}
    v = check("The moon is made of green cheese.", passages)
    assert v.label == "unsupported" and v.cited == ()


def test_sentences_without_claims_pass_and_uncited_facts_fail() -> None:
    assert check("Yes.", [POLICY]).label == "no_claims"
    assert check("The search results do not say.", []).label == "no_claims"
    v = check("Northwind Labs has 4,000 employees.", [])
    assert v.label == "unsupported" and v.unsupported == ("Northwind Labs has 4,000 employees",)


def test_a_sentence_saying_the_sources_lack_something_claims_nothing() -> None:
    # It names its subject, which the passage states too: still no fact, so no citation.
    v = check("The documents do not say how many employees Northwind Labs has.", [POLICY])
    assert v.label == "no_claims" and v.cited == () and v.passes
    assert check("The founding year of Northwind Labs is not specified in the search results.", [POLICY]).cited == ()
    assert check("文档中没有说明北风实验室的员工人数。", [POLICY]).label == "no_claims"
    # A fact stated beside it is checked as usual.
    assert check("Northwind Labs has 4,000 employees, but the documents do not say more.", []).label == "unsupported"


def test_chinese_sentences_are_checked_with_chinese_words() -> None:
    assert words("部门负责人审批") == ["部门", "负责人", "审批"]
    v = check("超过期限需部门负责人审批。", [ZH])
    assert v.label == "supported" and v.cited == (0,)
    v = check("超过期限需总经理和财务总监审批。", [ZH])
    assert not v.passes and "总经理" in "".join(v.unsupported)


def test_claims_keep_names_identifiers_and_skip_function_words() -> None:
    kinds = {c.text: c.kind for c in claims("Then Ingrid Solberg shipped the FX-200 in 2019 to Oslo.")}
    assert kinds == {"Ingrid": "name", "Solberg": "name", "shipped": "word", "FX-200": "name",
                     "2019": "number", "Oslo": "name"}  # fmt: skip
    # A capitalised first word is a name only as part of a longer name.
    assert {c.kind for c in claims("Refunds take long.") if c.text == "Refunds"} == {"word"}
    assert {c.kind for c in claims("Northwind Labs grew.") if c.text == "Northwind"} == {"name"}


def test_evidence_lift_rescues_a_paraphrased_word_but_never_a_number() -> None:
    sentence = "Receipts are refunded within ten working days."
    strict = Thresholds(supported=0.99)  # every content word must be backed
    base = check(sentence, [POLICY], thresholds=strict)
    assert base.label == "partial" and base.unsupported == ("refunded",)
    toks = [" Receipts", " are", " refunded", " within", " ten", " working", " days", "."]
    with_docs = [TokenLogprob(t, math.log(0.9)) for t in toks]
    without = [TokenLogprob(t, math.log(0.9 if t != " refunded" else 0.01)) for t in toks]
    lift = claim_lift(sentence, with_docs, without)
    assert lift[[c.text for c in claims(sentence)].index("refunded")] == pytest.approx(math.log(90), abs=1e-3)
    assert check(sentence, [POLICY], lift=lift, thresholds=strict).label == "supported"
    # A missing number is never rescued by the model's say-so.
    wrong = "Receipts are refunded within nine working days."
    wrong_toks = [TokenLogprob(t.replace("ten", "nine"), math.log(0.9)) for t in toks]
    low = [TokenLogprob(t.text, math.log(0.001)) for t in wrong_toks]
    assert not check(wrong, [POLICY], lift=claim_lift(wrong, wrong_toks, low)).passes
    # Tokens that spell another text give no lift at all.
    assert claim_lift(sentence, with_docs, [TokenLogprob("other", 0.0)]) == [None] * len(claims(sentence))


def test_thresholds_move_the_verdicts() -> None:
    sentence = "Travel expenses are reimbursed quickly by the finance team."
    strict, lax = Thresholds(supported=0.99), Thresholds(supported=0.3)
    assert check(sentence, [POLICY], thresholds=strict).label == "partial"
    assert check(sentence, [POLICY], thresholds=lax).label == "supported"


def test_exemplar_only_names_are_leaks() -> None:
    header = "Question: How deep is Lake Vorsk?\nAnswer: Lake Vorsk is 900 metres deep. The Kessa drains it."
    assert exemplar_leaks("The Kessa river flows past Tromsø.", header, "Where is Tromsø?", [FOUNDER]) == ("Kessa",)
    assert exemplar_leaks("The Kessa river flows past Tromsø.", header, "Is the Kessa long?", [FOUNDER]) == ()
    assert exemplar_leaks("Tromsø is in Norway.", header, "Where is Tromsø?", [FOUNDER]) == ()


def test_repeated_word_runs_are_found_in_both_languages() -> None:
    assert repeated_ngram("born in Vessa in the village of Vessa in the village of Vessa", 4) is not None
    assert repeated_ngram("He founded the company in 1999 and sold the company in 2004.", 4) is None
    zh = "公司位于北京市海淀区的中关村大街，位于北京市海淀区的中关村大街"
    assert repeated_ngram(zh, 4) is not None
    assert repeated_ngram("anything at all", 0) is None


def test_a_value_counts_only_with_its_subject_and_a_word_of_its_relation() -> None:
    founded = Passage("a", "Skullis Systems was founded by Drildos Thantiba in 2005.", "Skullis Systems")
    born = Passage("b", "Drildos Thantiba is an engineer. Drildos Thantiba was born in the year 1982.",
                   "Drildos Thantiba")  # fmt: skip
    # 2005 is in a passage naming her, but as a founding year: no sentence of it says "born".
    strict = Thresholds(relation=True)
    v = check("Drildos Thantiba was born in 2005.", [founded, born], thresholds=strict)
    assert not v.passes and v.unsupported == ("2005",)
    assert check("Drildos Thantiba was born in 1982.", [founded, born], thresholds=strict).passes
    # The default leaves the relation out (it cost more false alarms than it caught on the world).
    assert check("Drildos Thantiba was born in 2005.", [founded, born]).passes


def test_a_pronoun_takes_its_subject_from_what_came_before() -> None:
    trulmi = Passage("t", "Trulmi Systems was founded in 2016.", "Trulmi Systems")
    town = Passage("n", "Nunvannok was founded in 1210.", "Nunvannok")
    context = ["Write a short history of Trulmi Systems.", "Trulmi Systems makes desk lamps."]
    assert not check("It was founded in 1210.", [trulmi, town], context=context).passes
    assert check("It was founded in 2016.", [trulmi, town], context=context).passes
    # Without a subject to go by (no context) the year is found, as in the plain lexical check.
    assert check("It was founded in 1210.", [trulmi, town]).passes


def test_a_one_word_name_opening_a_sentence_is_its_subject() -> None:
    # "Baberri" opens the sentence, so its capital alone proves nothing; the question names it.
    question = "Describe Baberri: which region it belongs to and which river it lies on."
    said = ["Baberri is part of the Lennelkes region.", "It lies on the Kinshu River."]
    assert subject(said[0], [question]) == {"baberri"}
    # A pointer goes past an earlier pointer sentence to what that one points at.
    assert subject(said[1], [question, said[0]]) == {"baberri"}
    assert subject("The town belongs to Lennelkes.", [question, *said]) == {"baberri"}
    # "His" points at a person, not at the film the sentence before opens with.
    film = ["Who was the mother of the director of Rebecca?", "Rebecca was directed by Alfred Hitchcock."]
    assert subject("His mother was Emma Jane Whelan.", film) == {"alfred", "hitchcock"}
    # Written nowhere else as a name, an opening word is not one ("Refunds take ten days.").
    assert subject("Refunds take ten days.", ["How long do refunds take?"]) == frozenset()
    # So a river named in a passage about the region does not back a sentence about the town.
    region = Passage("r", "Lennelkes is a region. The Kinshu River runs through it.", "Lennelkes")
    town = Passage("t", "Baberri lies on the Tokus River.", "Baberri")
    assert not check(said[1], [region, town], context=[question, said[0]]).passes
    assert check("It lies on the Tokus River.", [region, town], context=[question, said[0]]).passes


def test_an_opening_possessive_is_not_the_subject() -> None:
    # "Aristarete's father" is someone else: the sentence's subject is the name it goes on to say.
    question = "Which country Aristarete's father is from?"
    assert subject("Aristarete's father was Nearchos.", [question]) == {"nearchos"}
    assert subject("Philip of Sicily's father was Peter.", ["Who was Philip of Sicily's father?"]) == {"sicily's"}
    page = Passage("a", "Aristarete was a painter. Her father and teacher was Nearchos.", "Aristarete")
    details = check("Aristarete's father was Nearchos.", [page], context=[question]).details
    assert ("Nearchos", "name", True, None) in details  # found on her page, so the query keeps it


def test_a_name_taken_from_another_subjects_passage_does_not_count() -> None:
    maker = Passage("m", "Vrunsha Foods makes the Thebazas chainsaw.", "Vrunsha Foods")
    other = Passage("f", "Favalze Foods is a family firm based in Genbalir.", "Favalze Foods")
    v = check("Favalze Foods makes the Thebazas chainsaw.", [maker, other])
    assert not v.passes and "Thebazas" in " ".join(v.unsupported)
    assert check("Vrunsha Foods makes the Thebazas chainsaw.", [maker, other]).passes
