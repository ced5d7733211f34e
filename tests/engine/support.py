"""Shared pieces for engine tests: a bare template, a small corpus about Versace, and a song whose
performer's own passage holds the next hop (for following names)."""

from __future__ import annotations

from collections.abc import Callable

from flare.engine.prompts import PromptTemplate
from flare.testing.scripted import ScriptedLM
from flare.types import Passage

BARE = PromptTemplate("plain", "", "", "\nAnswer:", ("\n",))

DOCS = [
    Passage("v1", "Gianni Versace founded the fashion house Versace in Milan in 1978.", "Versace",
            {"acl": ["public"], "year": 1978}),
    Passage("v2", "Gianni Versace was shot dead outside his Miami Beach mansion on 15 July 1997.",
            "Gianni Versace", {"acl": ["public"], "year": 1997}),
    Passage("s1", "Secret: the designer's will left the company to his niece Allegra.",
            "Company will", {"acl": ["legal"], "year": 1997}),
]


def has_docs(prompt: str) -> bool:
    return "Search results:" in prompt


def tail(prompt: str) -> str:
    """What a plain prompt holds after its last "Answer:": the answer so far."""
    return prompt.rsplit("Answer:", 1)[-1]


def says(text: str, low: dict[str, float] | None = None) -> list[tuple[str, float]]:
    """A scripted completion of ``text`` that goes on past the sentence's end."""
    return ScriptedLM.sentence(text + " And", low=low)


SONG = [
    Passage("s1", "Blue Kettle is a song by Mara Ulvin, released in 1971.", "Blue Kettle"),
    Passage("s2", "Blue Kettle was recorded in one afternoon.", "Blue Kettle (recording)"),
    Passage("p1", "Mara Ulvin was a singer. She died in Korsk in 1999.", "Mara Ulvin"),
]
# Shares half as many of "Mara Ulvin die"'s words as her own passage: a weak match of her name.
FANS = Passage("q1", "Ulvin fans meet every spring.", "Ulvin fans")


def song_lm(question_tail: Callable[[str], bool], *rules: tuple[Callable[[str], bool], str]) -> ScriptedLM:
    """The first sentence names Mara Ulvin; ``rules`` write the later sentences; a prompt ending
    ``question_tail`` ends the answer."""
    lm = ScriptedLM([(question_tail, [])])
    for match, text in rules:
        lm.add(match, says(text))
    lm.add(lambda p: not tail(p).strip(), says(" The performer of Blue Kettle was Mara Ulvin."))
    return lm
