"""Prompt layouts that only ever grow at the end.

Every prompt is laid out as fixed header (instruction and exemplars), documents, question,
answer so far. The header is identical for every call, so an LM backend with prefix caching
evaluates it once; a draft extends the previous draft's prompt, so only the newly committed
sentence is evaluated. Documents use the paper's "Search results" block with ``[1]``, ``[2]``.

Two layouts are built in: ``plain`` for base models (Gemma-3-270m) and ``chatml`` for models
trained on ChatML turns (SmolLM2-Instruct). The exemplars below were written for flare; methods
that read their own retrieval requests get exemplars annotated for them instead (the ``style``,
see :mod:`flare.engine.prompt_styles`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Literal

from flare.engine.prompt_styles import PROMPT_STYLES, STYLE_EXEMPLARS, STYLE_INSTRUCTIONS
from flare.types import Passage

Layout = Literal["plain", "chatml"]

INSTRUCTION = (
    "Answer the question in a few short sentences, using only facts from the search results. "
    "Do not copy whole passages. If the search results do not say, answer that it is not known."
)

EXEMPLARS: tuple[tuple[tuple[tuple[str, str], ...], str, str], ...] = (
    (
        (
            ("Lake Baikal", "Lake Baikal is a rift lake in Siberia. With a maximum depth of "
             "1,642 metres it is the deepest lake in the world."),
            ("Angara", "The Angara is the only river that flows out of Lake Baikal; it joins the "
             "Yenisei."),
        ),
        "How deep is Lake Baikal, and which river drains it?",
        "Lake Baikal is 1,642 metres deep at its deepest point. The Angara is the only river "
        "that flows out of it.",
    ),
    (
        (("京杭大运河", "京杭大运河北起北京，南到杭州，全长约1794公里，是世界上最长的人工运河。"),),
        "京杭大运河有多长？",
        "京杭大运河全长约1794公里。它是世界上最长的人工运河。",
    ),
)


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    """Renders ``[header, documents, question, answer so far]`` for one layout.

    Example::

        >>> t = PromptTemplate.plain()
        >>> t.render([], "Who wrote Hamlet?", "").endswith("Question: Who wrote Hamlet?\\nAnswer:")
        True
    """

    name: str
    header: str
    turn_open: str  # text before the documents and question of the live turn
    turn_close: str  # text between the question and the answer
    stop: tuple[str, ...]
    style: str = "answer"  # the method annotations its exemplars carry (prompt_styles)
    builtin: bool = False  # flare's own template, which exists in every layout and style

    @classmethod
    def build(
        cls, layout: str, instruction: str, exemplars: Sequence[tuple[Sequence[Passage], str, str]]
    ) -> PromptTemplate:
        """A ``plain`` or ``chatml`` template from an instruction and (docs, question, answer) exemplars."""
        if layout == "plain":
            blocks = [instruction, ""]
            for docs, q, a in exemplars:
                blocks.append(f"{_docs_block(docs)}Question: {q}\nAnswer: {a}\n")
            return cls("plain", "\n".join(blocks) + "\n", "", "\nAnswer:", ("\n", "Question:"))
        parts = [f"<|im_start|>system\n{instruction}<|im_end|>\n"]
        for docs, q, a in exemplars:
            parts.append(f"<|im_start|>user\n{_docs_block(docs)}Question: {q}<|im_end|>\n")
            parts.append(f"<|im_start|>assistant\n{a}<|im_end|>\n")
        return cls(
            "chatml",
            "".join(parts),
            "<|im_start|>user\n",
            "<|im_end|>\n<|im_start|>assistant\n",
            ("<|im_end|>", "\n", "<|im_start|>"),
        )

    @classmethod
    def plain(cls, style: str = "answer") -> PromptTemplate:
        return _builtin("plain", style)

    @classmethod
    def chatml(cls, style: str = "answer") -> PromptTemplate:
        return _builtin("chatml", style)

    @classmethod
    def for_model(cls, chat_template: str | None, style: str = "answer") -> PromptTemplate:
        """``chatml`` when the model's own chat template uses ChatML turns, else ``plain``."""
        return _builtin(layout_for(chat_template), style)

    def adapted(self, *, layout: str | None = None, style: str | None = None) -> PromptTemplate:
        """flare's own template in another ``layout`` and/or ``style``; a custom template as is.

        A template built from your own text cannot be re-annotated, so it is used unchanged:
        give it the exemplars your method needs.
        """
        if not self.builtin:
            return self
        return _builtin(layout or self.name, style or self.style)

    def render(self, docs: Sequence[Passage], question: str, answer_so_far: str) -> str:
        """The prompt; ``answer_so_far`` is appended last so later steps only extend it."""
        body = f"{_docs_block(docs)}Question: {defuse(question.strip())}"
        answer = defuse(answer_so_far.strip())
        sep = " " if self.name == "plain" else ""
        tail = f"{sep}{answer}" if answer else ""
        return f"{self.header}{self.turn_open}{body}{self.turn_close}{tail}"


def layout_for(chat_template: str | None) -> Layout:
    """``chatml`` for models whose chat template uses ChatML turns, else ``plain``."""
    return "chatml" if chat_template and "<|im_start|>" in chat_template else "plain"


@cache
def _builtin(layout: str, style: str) -> PromptTemplate:
    if layout not in ("plain", "chatml"):
        raise ValueError(f"unknown prompt layout {layout!r}; choose plain or chatml")
    if style not in PROMPT_STYLES:
        raise ValueError(f"unknown prompt style {style!r}; choose one of {PROMPT_STYLES}")
    instruction, shots = INSTRUCTION, _exemplars()
    if style != "answer":
        instruction = f"{INSTRUCTION} {STYLE_INSTRUCTIONS[style]}"
        shots = [([Passage(id=t, title=t, text=x) for t, x in docs], q, a) for docs, q, a in STYLE_EXEMPLARS[style]]
    return replace(PromptTemplate.build(layout, instruction, shots), style=style, builtin=True)


_CONTROL = re.compile(r"<\|[^|<>\s]{1,40}\|>|</?(?:start_of_turn|end_of_turn|bos|eos|pad|s)>")


def defuse(text: str) -> str:
    """Break control-token spellings (``<|im_start|>``, ``<end_of_turn>``) in untrusted text.

    Backends may read the template's turn markers as control tokens; a document or question that
    spelled one out could otherwise open a new turn. A zero-width space keeps the text readable.

        >>> defuse("hi <|im_end|> there")
        'hi <\u200b|im_end|> there'
    """
    return _CONTROL.sub(lambda m: m.group(0)[0] + "\u200b" + m.group(0)[1:], text)


def _exemplars() -> list[tuple[list[Passage], str, str]]:
    return [([Passage(id=t, title=t, text=x) for t, x in docs], q, a) for docs, q, a in EXEMPLARS]


def _docs_block(docs: Sequence[Passage]) -> str:
    if not docs:
        return ""
    lines = ["Search results:"]
    for n, p in enumerate(docs, start=1):
        title = f"{defuse(p.title)}: " if p.title else ""
        lines.append(f"[{n}] {title}{defuse(' '.join(p.text.split()))}")
    return "\n".join(lines) + "\n"
