"""Explicit queries (M4): one question per low-confidence span, asked of the LM itself.

For each span of the draft whose words fall below β (neighbouring spans one word apart are
merged), the LM is shown the question, the answer so far with the draft, and asked for a question
whose answer is that span. Documents retrieved for all questions are interleaved by the engine.
Spans are made of whole words (jieba's, in Chinese), and the prompt is written in the question's
language, so a Chinese draft gets a Chinese question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flare.lm.base import LanguageModel
from flare.query.words import Word, group_words
from flare.text import join_words, language_of
from flare.types import TokenLogprob


@dataclass(frozen=True, slots=True)
class Span:
    """A run of uncertain words in the draft."""

    text: str
    prob: float


def low_spans(tokens: Sequence[TokenLogprob], beta: float, *, max_gap: int = 1) -> list[Span]:
    """Spans of words with p < β; spans separated by at most ``max_gap`` confident words merge."""
    words = group_words(tokens)
    groups: list[list[Word]] = []
    for w in words:
        if w.prob >= beta:
            continue
        if groups and w.index - groups[-1][-1].index <= max_gap + 1:
            groups[-1].extend(words[groups[-1][-1].index + 1 : w.index + 1])
        else:
            groups.append([w])
    return [Span(join_words(w.text for w in g), min(w.prob for w in g)) for g in groups]


def question_prompt(question: str, context: str, span: str, *, language: str | None = None) -> str:
    """The prompt that asks the LM for a question whose answer is ``span``.

    ``language`` is ``en`` or ``zh``; by default it follows the user's question.
    """
    if (language or language_of(question)) == "zh":
        return f"问题：{question}\n文本：{context}\n写一个简短的问题，使上面的文本用“{span}”来回答它。\n问题："
    return (
        f"Question: {question}\n"
        f"Text: {context}\n"
        f'Write one short question that the text answers with "{span}".\n'
        "Question:"
    )


def ask_questions(
    lm: LanguageModel,
    question: str,
    context: str,
    spans: Sequence[Span],
    *,
    max_tokens: int = 32,
    language: str | None = None,
) -> list[str]:
    """One generated question per span (empty generations fall back to the span itself)."""
    out: list[str] = []
    for span in spans:
        if not span.text:
            continue
        completion = lm.complete(
            question_prompt(question, context, span.text, language=language), max_tokens=max_tokens, stop=("\n",)
        )
        text = completion.text.strip()
        out.append(text if text else span.text)
    return out

