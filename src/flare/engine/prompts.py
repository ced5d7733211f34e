"""Prompt layouts that only ever grow at the end, in the language of the question.

Every prompt is laid out as fixed header (instruction and exemplars), documents, question,
answer so far. The header is identical for every call in one language, so an LM backend with
prefix caching evaluates it once; a draft extends the previous draft's prompt, so only the newly
committed sentence is evaluated. Documents use the paper's "Search results" block with ``[1]``,
``[2]``, in both languages.

Two layouts are built in: ``plain`` for base models (Gemma-3-270m) and ``chatml`` for models
trained on ChatML turns (SmolLM2-Instruct); each in English and Chinese. Methods that read their
own retrieval requests get exemplars annotated for them instead (the ``style``, see
:mod:`flare.engine.prompt_styles`). The Chinese template
answers in Chinese whatever the documents' language (one exemplar reads an English passage).
The exemplars were written for flare and are made up (a ferry, a library): no real name or
number in them can be a fact about the user's documents, and each is marked as an example, apart
from the live question, so a small model does not take them for the user's search results.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Literal

from flare.engine.prompt_styles import PROMPT_STYLES, STYLE_EXEMPLARS, STYLE_INSTRUCTIONS
from flare.text import language_of
from flare.types import Passage

Layout = Literal["plain", "chatml"]
LANGUAGES = ("en", "zh")


@dataclass(frozen=True, slots=True)
class Labels:
    """The words of a layout: documents block, question and answer labels, example markers."""

    search: str
    question: str  # written right before the question, separator included
    answer: str  # written right before the answer; a space follows when it ends with ":"
    example: str = ""  # marks each exemplar ("{n}" is its number); "" for no markers
    live: str = ""  # marks the live question after the exemplars


EN = Labels("Search results:", "Question: ", "Answer:")
EN_MARKED = replace(EN, example="--- Example {n} (made up) ---", live="--- The user's question ---")
# The Chinese template keeps the paper's English labels: with Chinese labels Gemma-3-270m echoed the
# question more and stated fewer facts (dev questions of benchmarks/qinglan-zh, first line of a
# single-retrieval answer: fact recall 0.27 with 检索结果/问题/回答, 0.39 with the English labels).
ZH_MARKED = replace(EN, example="--- 示例{n}（虚构） ---", live="--- 用户的问题 ---")

INSTRUCTIONS = {
    "en": "Answer the question in a few short sentences, using only facts from the search results: state the "
    "numbers, dates, names and conditions themselves, do not repeat the question, and do not copy whole "
    "passages. The examples are made up. If the search results do not say, answer: The documents do not say.",
    "zh": "请只根据检索结果，用几句简短的中文回答问题：直接写出具体的数字、日期、名称和条件，不要复述问题，也不要照抄"
    "整段资料。示例都是虚构的。检索结果中没有的内容，就回答：文档中没有给出答案。",
}

FOLLOW_UP = {
    "en": "These search results are new. Write only the next sentence of your answer above, using them if they "
    "help.",
    "zh": "以上是新的检索结果。只写出你上面回答的下一句，有用时请依据它们。",
}
"""The line after the new passages of a follow-up turn (:meth:`PromptTemplate.render_followup`)."""

NOT_KNOWN = {"en": "The documents do not say.", "zh": "文档中没有给出答案。"}
"""What an answer says when the documents do not give it (C3), per language."""

Exemplar = tuple[tuple[tuple[str, str], ...], str, str]  # ((title, text), ...), question, answer

# The answers copy the sentences of the search results that answer the question, keeping their
# numbers and conditions: with answers written that way Gemma-3-270m stated more of the facts (dev
# questions of benchmarks/qinglan-zh, first line of a single-retrieval answer: fact recall 0.38
# with paraphrased answers, 0.50 copying). The mixed-language example comes first: the example
# nearest the live question is the one a small model borrows from when it has nothing to say
# (0.50 → 0.57 in this order). A variant whose copied sentences were not the passages' first
# scored 0.61 but made Gemma answer a travel question with the library's late fee (the Chinese
# test in tests/cli): these exemplars are the ones that test passes with.
EXEMPLARS: dict[str, tuple[Exemplar, ...]] = {
    "en": (
        (
            (("鹭湾渡轮", "鹭湾渡轮每40分钟一班，运营时间为早上6点到晚上10点，往返票价为14欧元。"),),
            "How often does the Heron Bay ferry leave, and can I bring a dog?",
            "The Heron Bay ferry (鹭湾渡轮) leaves every 40 minutes between 6 a.m. and 10 p.m. The documents do "
            "not say whether dogs may travel.",
        ),
        (
            (
                ("Harbourline ferries: timetable 2025", "From 1 May 2025 the Harbourline ferry to Kessa Island "
                 "leaves Port Amber every 40 minutes between 6 a.m. and 10 p.m. A return ticket costs 14 euros."),
                ("Harbourline ferries: bicycles", "Bicycles travel free on Harbourline ferries before 10 a.m.; "
                 "later in the day a bicycle ticket costs 3 euros."),
            ),
            "How often does the ferry to Kessa Island leave, and what does it cost to bring a bicycle?",
            "From 1 May 2025 the Harbourline ferry to Kessa Island leaves Port Amber every 40 minutes between "
            "6 a.m. and 10 p.m. Bicycles travel free before 10 a.m.; later in the day a bicycle ticket costs 3 euros.",
        ),
    ),
    "zh": (
        (
            (("Heron Bay ferry", "The Heron Bay ferry leaves every 40 minutes between 6 a.m. and 10 p.m. "
              "A return ticket costs 14 euros."),),
            "鹭湾渡轮多久一班？往返票多少钱？可以带宠物吗？",
            "鹭湾渡轮每40分钟一班，运营时间为早上6点到晚上10点。往返票价为14欧元。文档中没有说明能否携带宠物。",
        ),
        (
            (
                ("启明图书馆借阅规则（2025年版）", "自2025年3月起，启明图书馆读者每次最多可借8本书，借期为30天，"
                 "可在线续借一次，续借期为15天。"),
                ("启明图书馆逾期费用", "图书逾期归还的，每本每天收取0.5元滞纳金，累计不超过书价。"),
            ),
            "启明图书馆每次能借几本书？借期多长？逾期怎么收费？",
            "自2025年3月起，启明图书馆读者每次最多可借8本书，借期为30天。图书逾期归还的，每本每天收取0.5元滞纳金。",
        ),
    ),
}


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    """Renders ``[header, documents, question, answer so far]`` for one layout and language.

    Example::

        >>> t = PromptTemplate.plain()
        >>> t.render([], "Who wrote Hamlet?", "").endswith("Question: Who wrote Hamlet?\\nAnswer:")
        True
        >>> PromptTemplate.plain().for_language("zh").header.startswith("请只根据检索结果")
        True
    """

    name: str
    header: str  # instruction and exemplars: fixed text before the live turn
    turn_open: str  # text before the documents and question of the live turn
    turn_close: str  # text between the question and the answer
    stop: tuple[str, ...]
    style: str = "answer"  # the method annotations its exemplars carry (prompt_styles)
    builtin: bool = False  # flare's own template, which exists in every layout, style and language
    language: str = "en"
    labels: Labels = EN

    @classmethod
    def build(
        cls,
        layout: str,
        instruction: str,
        exemplars: Sequence[tuple[Sequence[Passage], str, str]],
        *,
        labels: Labels = EN,
        language: str = "en",
    ) -> PromptTemplate:
        """A ``plain`` or ``chatml`` template from an instruction and (docs, question, answer) exemplars."""
        shots = []
        for n, (docs, q, a) in enumerate(exemplars, start=1):
            mark = labels.example.format(n=n) + "\n" if labels.example else ""
            shots.append((mark, f"{_docs_block(docs, labels)}{labels.question}{q}", a))
        live = labels.live + "\n" if labels.live else ""
        if layout == "plain":
            blocks = [instruction, ""]
            for mark, user, a in shots:
                blocks.append(f"{mark}{user}\n{labels.answer}{_gap(labels.answer)}{a}\n")
            stop = ("\n", labels.question.strip(), EN.question.strip())
            return cls("plain", "\n".join(blocks) + "\n", live, f"\n{labels.answer}", tuple(dict.fromkeys(stop)),
                       language=language, labels=labels)
        parts = [f"<|im_start|>system\n{instruction}<|im_end|>\n"]
        for mark, user, a in shots:
            parts.append(f"<|im_start|>user\n{mark}{user}<|im_end|>\n")
            parts.append(f"<|im_start|>assistant\n{a}<|im_end|>\n")
        return cls(
            "chatml",
            "".join(parts),
            f"<|im_start|>user\n{live}",
            "<|im_end|>\n<|im_start|>assistant\n",
            ("<|im_end|>", "\n", "<|im_start|>"),
            language=language,
            labels=labels,
        )

    @classmethod
    def default(cls, layout: str = "plain", language: str = "en", style: str = "answer") -> PromptTemplate:
        """flare's own template for ``layout`` (``plain``/``chatml``), ``language`` (``en``/``zh``) and ``style``."""
        return _builtin(layout, style, language)

    @classmethod
    def plain(cls, style: str = "answer") -> PromptTemplate:
        return _builtin("plain", style, "en")

    @classmethod
    def chatml(cls, style: str = "answer") -> PromptTemplate:
        return _builtin("chatml", style, "en")

    @classmethod
    def for_model(cls, chat_template: str | None, style: str = "answer", language: str = "en") -> PromptTemplate:
        """``chatml`` when the model's own chat template uses ChatML turns, else ``plain``."""
        return _builtin(layout_for(chat_template), style, language)

    def adapted(
        self, *, layout: str | None = None, style: str | None = None, language: str | None = None
    ) -> PromptTemplate:
        """flare's own template in another ``layout``, ``style`` and/or ``language``.

        A template built from your own text cannot be re-annotated or translated, so it is used
        unchanged, only marked with ``language`` so the look-ahead cap still follows it: give it
        the exemplars your method and language need.
        """
        if not self.builtin:
            return self if language in (None, self.language) else replace(self, language=language)
        return _builtin(layout or self.name, style or self.style, language or self.language)

    def for_language(self, language: str) -> PromptTemplate:
        """This template for answers in ``language`` (see :meth:`adapted`)."""
        return self.adapted(language=language)

    @property
    def prefix(self) -> str:
        """The text every prompt of this template starts with, whatever the question: what a
        model's cache holds between questions (``lm.reset_cache(template.prefix)``)."""
        return self.header + self.turn_open

    def render(self, docs: Sequence[Passage], question: str, answer_so_far: str) -> str:
        """The prompt; ``answer_so_far`` is appended last so later steps only extend it."""
        body = f"{_docs_block(docs, self.labels)}{self.labels.question}{defuse(question.strip())}"
        answer = defuse(answer_so_far.strip())
        tail = f"{_gap(self.turn_close)}{answer}" if answer else ""
        return f"{self.header}{self.turn_open}{body}{self.turn_close}{tail}"


    def render_followup(self, docs: Sequence[Passage], new: Sequence[Passage], question: str,
                        answer_so_far: str) -> str:  # fmt: skip
        """The prompt of ``docs`` and the answer so far, then the ``new`` passages in a follow-up turn.

        It starts with :meth:`render`'s prompt for ``docs`` (the draft's), which a backend with
        prefix caching has evaluated already, so only the new passages and one line are new; the
        model writes the next sentence in a turn of its own. Numbers go on from ``docs`` (``[4]``
        after three). ChatML only: a ``plain`` template renders all the passages before the
        question, as :meth:`render` does.
        """
        if self.name != "chatml":
            return self.render([*docs, *new], question, answer_so_far)
        head = self.render(docs, question, answer_so_far)
        block = _docs_block(new, self.labels, start=len(docs) + 1)
        return f"{head}<|im_end|>\n<|im_start|>user\n{block}{FOLLOW_UP[self.language]}{self.turn_close}"


def resolve_language(setting: str, question: str) -> str:
    """The language to answer in: ``setting`` (``en``/``zh``), or the question's when ``auto``."""
    return language_of(question) if setting == "auto" else setting


def layout_for(chat_template: str | None) -> Layout:
    """``chatml`` for models whose chat template uses ChatML turns, else ``plain``."""
    return "chatml" if chat_template and "<|im_start|>" in chat_template else "plain"


@cache
def _builtin(layout: str, style: str, language: str) -> PromptTemplate:
    if layout not in ("plain", "chatml"):
        raise ValueError(f"unknown prompt layout {layout!r}; choose plain or chatml")
    if style not in PROMPT_STYLES:
        raise ValueError(f"unknown prompt style {style!r}; choose one of {PROMPT_STYLES}")
    if language not in LANGUAGES:
        raise ValueError(f"no built-in prompts in language {language!r}; choose one of {LANGUAGES}")
    instruction, examples = INSTRUCTIONS[language], EXEMPLARS[language]
    if style != "answer":
        instruction, examples = f"{instruction} {STYLE_INSTRUCTIONS[style]}", STYLE_EXEMPLARS[style]
    shots = [([Passage(id=t, title=t, text=x) for t, x in docs], q, a) for docs, q, a in examples]
    labels = ZH_MARKED if language == "zh" else EN_MARKED
    t = PromptTemplate.build(layout, instruction, shots, labels=labels, language=language)
    return replace(t, style=style, builtin=True)


def _gap(label: str) -> str:
    """A space after an ASCII colon ("Answer: …"); none after a full-width one or a newline."""
    return " " if label.endswith(":") else ""


_CONTROL = re.compile(r"<\|[^|<>\s]{1,40}\|>|</?(?:start_of_turn|end_of_turn|bos|eos|pad|s)>")


def defuse(text: str) -> str:
    """Break control-token spellings (``<|im_start|>``, ``<end_of_turn>``) in untrusted text.

    Backends may read the template's turn markers as control tokens; a document or question that
    spelled one out could otherwise open a new turn. A zero-width space keeps the text readable.

        >>> defuse("hi <|im_end|> there")
        'hi <\u200b|im_end|> there'
    """
    return _CONTROL.sub(lambda m: m.group(0)[0] + "\u200b" + m.group(0)[1:], text)


def _docs_block(docs: Sequence[Passage], labels: Labels = EN, start: int = 1) -> str:
    if not docs:
        return ""
    lines = [labels.search]
    for n, p in enumerate(docs, start=start):
        title = f"{defuse(p.title)}: " if p.title else ""
        lines.append(f"[{n}] {title}{defuse(' '.join(p.text.split()))}")
    return "\n".join(lines) + "\n"
