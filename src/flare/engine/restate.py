"""A sentence that only restates the question is not an answer: detect it, retry once, or say so.

Small models often answer a question by repeating it as a statement ("2026年境内差旅的报销流程包括
提交期限和付款时限。"), or by echoing it as a question; cited, such a sentence looks grounded and says
nothing. :func:`restates` finds them: a sentence restates the question when it states no number
the question does not, and every content word it uses is the question's own (or a generic word
such as "包括", "following", a pronoun, a question word) — so an echo of the question is one too —
and a sentence that is itself a question (but for self-ask's "Follow up:" questions).

:func:`retry_restated` gives the model one more sentence with the restatement as context — it
often goes on to the facts — and otherwise ends the answer there; an answer that would have no
sentence at all says, in its language, that the documents do not give the answer (C3). The
rejected restatement is kept in the step's ``rejected`` list of the trace.

Example::

    >>> restates("2026年境内出差需要提前多久申请。", "2026年境内出差需要提前多久申请？由谁审批？")
    True
    >>> restates("境内出差须提前3个工作日申请。", "2026年境内出差需要提前多久申请？")
    False
"""

from __future__ import annotations

import time
from dataclasses import replace

from flare.engine.baselines import FOLLOW_UP
from flare.engine.prompts import NOT_KNOWN
from flare.engine.sentences import lookahead_tokens
from flare.engine.step import Commit, Piece, StepContext, first_piece
from flare.text import HAN_RE, content_words, ends_sentence, fold, join_words, numbers, whole_number

GENERIC = frozenset(
    [
        # Chinese: pronouns, question words, and words that announce content without giving it.
        "它", "他", "她", "它们", "他们", "她们", "我们", "您", "你", "其", "该", "此", "这个", "那个", "这些",
        "什么", "多久", "多少", "哪些", "哪个", "哪里", "哪儿", "如何", "怎么", "怎样", "为什么", "几", "谁", "吗",
        "呢", "包括", "包含", "如下", "以下", "相关", "有关", "具体", "问题", "情况", "内容", "信息", "方面", "规定",
        "要求", "需要", "可以", "能", "会", "应该", "应当", "主要", "一些", "一个", "有些", "说明", "提到", "介绍",
        "请", "关于", "对于", "方式", "时间", "时候", "以及", "以便", "还", "也", "即", "为", "等", "分别",
        "由", "被", "把", "将", "给", "向", "从", "对", "于", "到", "之", "所", "是否", "就是",
        # English: the same kinds of words.
        "i", "you", "we", "us", "our", "them", "there", "these", "those", "do", "does", "did", "can", "could",
        "should", "would", "will", "must", "may", "include", "includes", "including", "following", "follows",
        "information", "details", "detail", "question", "answer", "about", "regarding", "related", "some",
        "several", "various", "provides", "describes", "mentions", "states", "says", "explains", "asked",
        "many", "much", "long", "often", "also", "has", "have", "had",
    ]
)  # fmt: skip
"""Words that carry no fact of their own: a sentence made of these and the question's words restates it."""


def restates(sentence: str, question: str) -> bool:
    """Does ``sentence`` only restate (or echo) ``question``, adding no fact?"""
    if text_is_question(sentence):
        return True
    asked = {n.value for n in numbers(question)}
    if any(n.value not in asked for n in numbers(sentence)):
        return False
    q_words = content_words(question)
    q_han = {c for c in question if HAN_RE.match(c)}
    shared = False
    for w in content_words(sentence):
        if w in q_words or (HAN_RE.match(w[0]) and all(c in q_han for c in w)):
            shared = True  # "报销流程" when the question says "报销" and "流程": jieba cut them differently
        elif w not in GENERIC and whole_number(w) is None:
            return False
    return shared


def text_is_question(sentence: str) -> bool:
    """A sentence that asks (ends with ``?``/``？``) answers nothing — except the follow-up
    questions that self-ask decomposition writes on purpose."""
    text = sentence.strip().rstrip("\"'”’」』）)")
    return text.endswith(("?", "？")) and not text.startswith(FOLLOW_UP)


def retry_restated(ctx: StepContext, commit: Commit) -> Commit | None:
    """After a restating sentence: the model's next sentence if it adds facts; else the "not known"
    sentence when the answer has none yet, or None (end the answer without the restatement)."""
    question = ctx.run.question
    t0 = time.perf_counter()
    piece = commit.piece
    if not piece.truncated:
        context = join_words([ctx.run.answer_so_far, piece.text])
        prompt = ctx.template.render(commit.docs, question, context)
        s = ctx.settings
        budget = min(lookahead_tokens(s, ctx.template.language),
                     s.max_output_tokens - ctx.run.output_tokens - len(piece.tokens))
        if budget > 0:
            nxt = first_piece(ctx.lm.complete(prompt, max_tokens=budget, stop=ctx.template.stop,
                                              stop_when=ends_sentence))
            ctx.record.timings["restated"] = round(time.perf_counter() - t0, 4)
            if nxt.text and not restates(nxt.text, question) and fold(nxt.text) != fold(piece.text):
                ctx.record.rejected.append(piece.text)
                return replace(commit, piece=nxt, support=None)  # a new sentence: checked afresh
    ctx.record.rejected.append(piece.text)
    if ctx.run.sentences:
        return None
    return Commit(Piece(NOT_KNOWN.get(ctx.template.language, NOT_KNOWN["en"]), (), True), retrieved=commit.retrieved)
