"""Invented names for the evaluation world, and the word lists that keep them invented.

A name is built from syllables (onset, vowel, optional coda), so it reads like a name but is no
real word: every candidate is rejected when it is in ``data/world/real_words.txt`` (the words of
the bundled Wikipedia-style pools that this syllable grammar could produce, plus a hand list of
famous names) and when it, or any name already taken, would be a substring of the other. A model
that knows the real world therefore cannot know these entities: whatever it says about them
comes from the passages or is invented.

``data/world/common_words.txt`` lists ordinary English words (those written in lower case at
least 20 times in the pools); the truth metrics use it to tell a capitalised ordinary word
("However", "Lake") from a name that is not in the world ("Paris"). Both lists are rebuilt with::

    python -m flare.evaluate.world.wordlists /work/shared/data

Example::

    names = NameMaker(random.Random(0))
    names.take(3)                 # "Vomukrik"
    names.variant("Drelmosa")     # "Drelmosu", a near-miss twin
"""

from __future__ import annotations

import random
import re
from functools import cache
from importlib import resources

_ONSET_FIRST = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
                "br", "dr", "gr", "kr", "tr", "sk", "st", "th", "vr", "zh")  # fmt: skip
_ONSET_MID = ("b", "d", "k", "l", "m", "n", "r", "s", "t", "v", "z", "sh")
_VOWELS = ("a", "e", "i", "o", "u")
_CODAS = ("", "", "", "l", "n", "r", "s", "k")

_CODA_RE = "(?:l|n|r|s|k)?"
GRAMMAR = re.compile(
    rf"^(?:{'|'.join(sorted(_ONSET_FIRST, key=len, reverse=True))})[aeiou]{_CODA_RE}"
    rf"(?:(?:{'|'.join(sorted(_ONSET_MID, key=len, reverse=True))})[aeiou]{_CODA_RE}){{1,3}}$"
)
"""Every lower-case word the syllable grammar can produce (2 to 4 syllables) matches this."""

FAMOUS = (
    "abraham", "adele", "alibaba", "amara", "banana", "berlin", "bolivar", "borneo", "dakota", "delano",
    "denali", "dorado", "galileo", "kenobi", "kilimanjaro", "kubrick", "lebanon", "malibu", "manila",
    "marlboro", "matisse", "melania", "milano", "minerva", "monaco", "morocco", "nairobi", "nevada",
    "pokemon", "riviera", "samoa", "sarajevo", "sedona", "tobago", "toledo", "topeka", "toronto", "tuvalu",
)  # fmt: skip
"""Well-known names the grammar can produce, in case the pools happen not to contain them."""

MIN_LEN, MAX_LEN = 5, 10
MIN_COUNT_COMMON = 20


@cache
def real_words() -> frozenset[str]:
    """Real words and names a generated name must not equal (lower case)."""
    return frozenset(_read_list("real_words.txt")) | frozenset(FAMOUS)


@cache
def common_words() -> frozenset[str]:
    """Ordinary English words, lower case: a capitalised one is not taken for a name."""
    return frozenset(_read_list("common_words.txt"))


def _read_list(name: str) -> list[str]:
    text = resources.files("flare").joinpath(f"data/world/{name}").read_text(encoding="utf-8")
    return [w for w in text.split() if w]


class NameMaker:
    """Draws invented words; none equals a real word, and no two overlap as substrings.

    Every word it hands out is remembered, so the rule holds across all names of one world
    (``take`` for a fresh word, ``variant`` for a near-miss of an existing one).
    """

    def __init__(self, rng: random.Random, *, reserved: tuple[str, ...] = ()) -> None:
        self._rng = rng
        self._taken: list[str] = []
        self._reserved = tuple(w.lower() for w in reserved)  # words of the templates, e.g. "labs"

    @property
    def taken(self) -> tuple[str, ...]:
        return tuple(self._taken)

    def take(self, syllables: int) -> str:
        """A fresh capitalised word of ``syllables`` syllables (2 to 4)."""
        for _ in range(10_000):
            word = self._syllable(_ONSET_FIRST)
            for _ in range(syllables - 1):
                word += self._syllable(_ONSET_MID)
            if self._accept(word):
                return word.capitalize()
        raise RuntimeError("the name grammar ran out of fresh words; use fewer entities")  # pragma: no cover

    def variant(self, name: str) -> str | None:
        """A near-miss of ``name``: one vowel changed (``Drelmosa`` → ``Drelmosu``), or None."""
        word = name.lower()
        spots = [i for i, c in enumerate(word) if c in _VOWELS]
        self._rng.shuffle(spots)
        for i in spots:
            for v in self._rng.sample(_VOWELS, len(_VOWELS)):
                cand = word[:i] + v + word[i + 1 :]
                if cand != word and self._accept(cand):
                    return cand.capitalize()
        return None

    def _syllable(self, onsets: tuple[str, ...]) -> str:
        return self._rng.choice(onsets) + self._rng.choice(_VOWELS) + self._rng.choice(_CODAS)

    def _accept(self, word: str) -> bool:
        if not MIN_LEN <= len(word) <= MAX_LEN or word in real_words():
            return False
        if any(word in r or r in word for r in self._reserved):
            return False
        if any(word in t or t in word for t in self._taken):
            return False
        self._taken.append(word)
        return True
