"""Group drafted tokens into words so masking never leaves half a word behind.

Sub-word tokens (" Vers" + "ace") belong to one word; a word is as uncertain as its least
probable token. Each CJK character is a word of its own, as Chinese has no spaces.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flare.engine.sentences import CJK
from flare.types import TokenLogprob


@dataclass(frozen=True, slots=True)
class Word:
    """A word of the draft, the probability of its least likely token, and where it starts."""

    text: str
    prob: float
    index: int  # position among the draft's words


def group_words(tokens: Sequence[TokenLogprob]) -> list[Word]:
    """Words of a draft, in order, each with the minimum probability of its tokens."""
    pieces: list[tuple[str, float]] = []
    for tok in tokens:
        for j, segment in enumerate(_split_token(tok.text)):
            starts_word = j > 0 or not pieces or _starts_new_word(segment, pieces[-1][0])
            if starts_word:
                pieces.append((segment, tok.prob))
            else:
                text, prob = pieces[-1]
                pieces[-1] = (text + segment, min(prob, tok.prob))
    words: list[Word] = []
    for text, prob in pieces:
        stripped = text.strip()
        if stripped:
            words.append(Word(stripped, prob, len(words)))
    return words


def _split_token(text: str) -> list[str]:
    """Split a token's text at spaces and around CJK characters (each its own word)."""
    out: list[str] = []
    current = ""
    for ch in text:
        if CJK.match(ch):
            if current:
                out.append(current)
            out.append(ch)
            current = ""
        elif ch.isspace() and current.strip():
            out.append(current)
            current = ch
        else:
            current += ch
    if current:
        out.append(current)
    return out or [text]


def _starts_new_word(segment: str, previous: str) -> bool:
    if segment[:1].isspace() or CJK.match(segment[:1]) or CJK.match(previous[-1:]):
        return True
    # Punctuation after a word stays with it ("Paris" + "."), a word after punctuation is new.
    return not previous[-1:].isalnum() and segment[:1].isalnum() and previous.strip() != ""
