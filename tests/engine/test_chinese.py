"""Chinese through the loop: look-ahead to the sentence end, cut sentences, the question's language,
whole-word queries and restatements — driven by the scripted LM (one token per Han character)."""

from __future__ import annotations

import math

import pytest

from flare.config import Settings
from flare.engine.judge import fact_dense
from flare.engine.loop import Flare
from flare.engine.prompts import NOT_KNOWN, PromptTemplate, resolve_language
from flare.engine.restate import restates
from flare.engine.sentences import CUT_MARK, whole_words_end
from flare.engine.step import first_piece
from flare.query.explicit import question_prompt
from flare.testing.memory import MemoryRetriever
from flare.testing.scripted import Rule, ScriptedLM
from flare.text import split_sentences, words
from flare.trace.tracers import MemoryTracer
from flare.types import Completion, Passage, TokenLogprob

DOCS = [
    Passage("f26", "北风实验室于2011年在挪威特罗姆瑟成立，创始人是海洋生物学家英格丽·索尔贝格。", "公司简介",
            {"year": 2026, "acl": ["staff"]}),
    Passage("t26", "2026年境内出差审批通过后五个工作日内付款。", "差旅-2026-04", {"year": 2026, "acl": ["staff"]}),
    Passage("t25", "2025年境内出差审批通过后十五个工作日内付款。", "差旅-2025-02", {"year": 2025, "acl": ["staff"]}),
]
QUESTION = "北风实验室是谁创立的？"
# 70 Han characters and more: longer than the English cap of 64 tokens, shorter than the Chinese one.
LONG = ("北风实验室于2011年在挪威北部的特罗姆瑟市成立，创始人是长期研究北极海冰与浮游生物的海洋生物学家"
        "英格丽·索尔贝格，她此前在特罗姆瑟大学任教十余年。")


def live(prompt: str) -> str:
    """The live turn of a prompt (after the built-in template's exemplars)."""
    return prompt.rsplit("--- 用户的问题 ---", 1)[-1].rsplit("--- The user's question ---", 1)[-1]


def has_docs(prompt: str) -> bool:
    return "Search results:" in live(prompt)


def answered(prompt: str) -> str:
    """What the answer so far holds in a prompt."""
    return live(prompt).rsplit("Answer:", 1)[-1].strip()


def once(text: str) -> list[Rule]:
    """Rules that say ``text`` once and then end the answer (as a model ends its line)."""
    return [(lambda p: answered(p).endswith(text.strip()), []), (lambda p: True, ScriptedLM.sentence(text))]


def engine(lm: ScriptedLM, **settings: object) -> tuple[Flare, MemoryTracer, MemoryRetriever]:
    tracer, retriever = MemoryTracer(), MemoryRetriever(DOCS)
    return Flare(lm, retriever, Settings(**settings), tracer=tracer), tracer, retriever  # type: ignore[arg-type]


# -- look-ahead ----------------------------------------------------------------------------------------


def test_a_long_chinese_sentence_is_drafted_to_its_end_not_to_the_english_cap() -> None:
    assert len(ScriptedLM.split(LONG)) > Settings().max_sentence_tokens
    lm = ScriptedLM(once(LONG))
    flare, _, _ = engine(lm, method="single")
    answer = flare.answer(QUESTION)
    assert [s.text for s in answer.sentences] == [LONG]
    assert answer.stop_reason == "end" and answer.caps_hit == ()
    assert lm.requests[0].max_tokens == Settings().max_sentence_tokens_zh
    assert split_sentences(answer.text) == [LONG]


def test_a_sentence_cut_by_the_cap_is_committed_marked_without_its_partial_word() -> None:
    # English look-ahead forced on a Chinese answer: the cap (20 tokens) falls inside the name.
    text = "北风实验室于2011年成立，创始人是海洋生物学家英格丽·索尔贝格。"
    lm = ScriptedLM([(lambda p: True, ScriptedLM.sentence(text + "她后来离开了。"))])
    flare, _, _ = engine(lm, method="single", max_sentence_tokens_zh=24)
    answer = flare.answer(QUESTION)
    (sentence,) = answer.sentences
    assert sentence.text.endswith(CUT_MARK) and "英格丽" not in sentence.text and "·" not in sentence.text
    assert sentence.text.startswith("北风实验室于2011年成立")
    assert answer.stop_reason == "max_sentence_tokens" and "max_sentence_tokens" in answer.caps_hit
    assert "索尔贝格" not in answer.render()  # the rest of the name never becomes a "sentence"


def test_language_en_forces_the_english_cap_and_prompt() -> None:
    lm = ScriptedLM([(lambda p: True, ScriptedLM.sentence(LONG))])
    flare, _, _ = engine(lm, method="none", language="en")
    answer = flare.answer(QUESTION)
    assert lm.requests[0].max_tokens == Settings().max_sentence_tokens
    assert "Question: " + QUESTION in lm.calls[0] and "示例" not in lm.calls[0]
    assert answer.sentences[0].text.endswith(CUT_MARK)


def test_a_sentence_cut_where_the_model_loops_is_marked_too() -> None:
    looping = "住宿每晚最多报销450元，其他城市住宿每晚最多报销450元，其他城市住宿每晚最多报销450元。"
    lm = ScriptedLM(once(looping))
    flare, _, _ = engine(lm, method="single")
    answer = flare.answer(QUESTION)
    (sentence,) = answer.sentences
    assert sentence.text == "住宿每晚最多报销450元，其他城市" + CUT_MARK and answer.stop_reason == "repetition"


def test_a_rule_that_repeats_a_phrase_for_two_cities_is_not_a_loop() -> None:
    rule = "住宿标准为一线城市每晚不超过600元，其他城市每晚不超过450元。"
    flare, _, _ = engine(ScriptedLM(once(rule)), method="none")
    answer = flare.answer("一线城市和其他城市的住宿标准是多少？")
    assert [s.text for s in answer.sentences] == [rule] and answer.stop_reason == "end"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("创始人是海洋生物学家英格丽·", "创始人是海洋生物学家"),
        ("创始人是海洋生物学家英格丽·索尔", "创始人是海洋生物学家"),
        ("审批通过后，款项在五个工作", "审批通过后，款项在五个"),
        ("款项在5个工作日内支付，", "款项在5个工作日内支付"),
        ("It was founded by Ingrid Sol", "It was founded by Ingrid"),
        ("款", ""),
    ],
)
def test_whole_words_end(text: str, kept: str) -> None:
    assert text[: whole_words_end(text)] == kept


def test_first_piece_drops_the_partial_word_from_text_and_tokens() -> None:
    toks = tuple(TokenLogprob(c, math.log(0.9)) for c in "创始人是英格丽·索尔")
    piece = first_piece(Completion("创始人是英格丽·索尔", toks, "length"))
    assert piece.cut and piece.text == "创始人是" and "".join(t.text for t in piece.tokens) == "创始人是"
    whole = first_piece(Completion("创始人是她。", tuple(TokenLogprob(c, 0.0) for c in "创始人是她。"), "length"))
    assert not whole.cut and whole.text == "创始人是她。"  # the cap fell right after the full stop


def test_chinese_sentence_ends() -> None:
    assert split_sentences("防护等级为IP68.它支持4G。") == ["防护等级为IP68.", "它支持4G。"]
    assert split_sentences("须提前7个工作日申请；60个自然日内提交。") == ["须提前7个工作日申请；60个自然日内提交。"]
    assert split_sentences("版本v3.2于9月发布。\n第二行") == ["版本v3.2于9月发布。", "第二行"]


# -- the question's language ------------------------------------------------------------------------


def test_a_chinese_question_gets_chinese_instruction_exemplars_and_labels() -> None:
    lm = ScriptedLM(once("北风实验室由英格丽·索尔贝格创立。"))
    flare, _, _ = engine(lm, method="single")
    flare.answer(QUESTION)
    prompt = lm.calls[0]
    zh = PromptTemplate.default("plain", "zh")
    assert prompt.startswith(zh.header) and "示例1（虚构）" in zh.header and "文档中没有给出答案" in zh.header
    assert "中文回答" in zh.header and "鹭湾渡轮" in zh.header  # a Chinese answer to an English passage
    assert live(prompt).startswith("\nSearch results:\n[1] 公司简介: ")
    assert prompt.endswith(f"Question: {QUESTION}\nAnswer:")


def test_mixed_questions_pick_their_language() -> None:
    assert resolve_language("auto", "QL-300 的防护等级是多少？") == "zh"
    assert resolve_language("auto", "How long is the QL-300 warranty?") == "en"
    assert resolve_language("zh", "How long?") == "zh"
    en = PromptTemplate.default("chatml", "en")
    assert en.for_language("zh") == PromptTemplate.default("chatml", "zh")
    custom = PromptTemplate("plain", "H\n", "", "\nAnswer:", ("\n",))
    assert custom.for_language("zh").header == "H\n" and custom.for_language("zh").language == "zh"


def test_chinese_prompts_only_grow_at_the_end_and_the_header_is_fixed() -> None:
    for layout in ("plain", "chatml"):
        t = PromptTemplate.default(layout, "zh")
        p1, p2 = t.render(DOCS[:1], QUESTION, ""), t.render(DOCS[:1], QUESTION, "北风实验室成立于2011年。")
        assert p2.startswith(p1) and p1.startswith(t.header)
        assert "北风" not in t.header and "Northwind" not in t.header  # no live fact in the exemplars


def test_explicit_question_prompt_follows_the_language() -> None:
    assert question_prompt("款项多久支付？", "审批通过后，款项在两个工作日内支付。", "两个").endswith("问题：")
    assert "“两个”" in question_prompt("款项多久支付？", "…", "两个")
    assert question_prompt("When?", "It was in 1997.", "1997").endswith("Question:")


# -- queries -----------------------------------------------------------------------------------------


def test_a_masked_chinese_query_holds_only_whole_words() -> None:
    draft = "审批通过后，款项会在两个工作日内支付。"
    lm = ScriptedLM([
        (lambda p: answered(p).endswith("支付。"), []),
        (lambda p: has_docs(p) and not answered(p), ScriptedLM.sentence("2026年境内出差审批通过后五个工作日内付款。")),
        (has_docs, ScriptedLM.sentence("审批通过后，款项在五个工作日内支付。")),
        (lambda p: True, ScriptedLM.sentence(draft, low={"两": 0.1})),
    ])
    flare, tracer, _ = engine(lm, max_sentences=2, trigger="min", verify="off")  # the paper's loop
    flare.answer("2026年境内出差审批通过后多久付款？")
    step = tracer.traces[0].steps[1]
    assert step.decision == "retrieve"
    (query,) = step.queries
    assert "两" not in query and "个" not in query.replace("个工作日", "")  # "两个" went as one word
    assert set(words(query)) <= set(words(draft))


def test_chinese_numbers_make_a_sentence_fact_dense() -> None:
    for text in ("审批通过后十个工作日内付款。", "二〇二六年起执行。", "2026年起执行。", "QL-300 支持北斗。"):
        assert fact_dense(text), text
    assert not fact_dense("这是一个统一的流程。")


# -- restatements ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "question", "expected"),
    [
        ("2026年境内差旅的报销流程包括提交期限和付款时限。", "2026年境内差旅的报销流程有哪些提交期限和付款时限？",
         True),
        ("QL-200 可以测量哪些指标？", "QL-200 可以测量哪些指标？一块电池能用多久？", True),
        ("它可以测量哪些指标？", "QL-200 可以测量哪些指标？", True),
        ("The reimbursement process includes the following details.", "What is the reimbursement process?", True),
        ("QL-200 可以测量pH、溶解氧和浊度。", "QL-200 可以测量哪些指标？", False),
        ("审批通过后5个工作日内付款。", "审批通过后多久付款？", False),
        ("Follow up: Who directed Rebecca?", "Who was the mother of the director of the film Rebecca?", False),
        ("He.", "Why did the founder of Versace die?", False),
        ("由哪个部门审批？", "2026年境内出差需要提前多久申请？由谁审批？", True),  # a question answers nothing
    ],
)
def test_restates(sentence: str, question: str, expected: bool) -> None:
    assert restates(sentence, question) is expected


def test_a_restated_question_is_replaced_by_the_sentence_that_follows_it() -> None:
    echo, fact = "北风实验室是谁创立的？", "北风实验室的创始人是英格丽·索尔贝格。"
    lm = ScriptedLM([
        (lambda p: answered(p).endswith(fact), []),
        (lambda p: answered(p).endswith(echo), ScriptedLM.sentence(fact)),
        (lambda p: True, ScriptedLM.sentence(echo)),
    ])
    flare, tracer, _ = engine(lm, method="single")
    answer = flare.answer(QUESTION)
    assert [s.text for s in answer.sentences] == [fact] and answer.sentences[0].citations == (1,)
    step = tracer.traces[0].steps[0]
    assert step.decision == "retrieve" and step.rejected == [echo] and step.lm_calls == 2


def test_an_answer_that_only_restates_says_the_documents_do_not_give_it() -> None:
    lm = ScriptedLM([(lambda p: True, ScriptedLM.sentence("北风实验室是由谁创立的。"))])
    flare, tracer, _ = engine(lm, method="single")
    answer = flare.answer(QUESTION)
    assert [s.text for s in answer.sentences] == [NOT_KNOWN["zh"]] and answer.sources == ()
    step = tracer.traces[0].steps[0]
    assert step.rejected == ["北风实验室是由谁创立的。"] and step.sentence == NOT_KNOWN["zh"]


def test_a_later_restatement_ends_the_answer_without_being_shown() -> None:
    fact = "北风实验室的创始人是英格丽·索尔贝格。"
    echo = "北风实验室是谁创立的？"
    lm = ScriptedLM([
        (lambda p: answered(p).endswith(echo), []),
        (lambda p: answered(p).endswith(fact), ScriptedLM.sentence(echo)),
        (lambda p: True, ScriptedLM.sentence(fact)),
    ])
    flare, _, _ = engine(lm, method="single")
    answer = flare.answer(QUESTION)
    assert [s.text for s in answer.sentences] == [fact] and answer.stop_reason == "end"
