"""How the evaluation world writes its facts: sentence templates and number surfaces.

Each relation has several templates, so one fact reads differently from passage to passage and
a retriever cannot match a fixed phrase. ``{S}`` is the subject at the start of a sentence (the
name, or a pronoun such as "It" or "She" after the passage's first sentence), ``{name}`` the
subject's full name anywhere, ``{v}`` the value as written and ``{Y}`` the year of an older
figure. Numbers are written in digits, with a thousands comma, or in words ("twelve thousand"),
and :func:`surfaces` lists every form, so "12,000" and "twelve thousand" count as the same value.

Example::

    >>> spell(12400)
    'twelve thousand four hundred'
    >>> surfaces("price", 349)
    ('$349', '349 dollars', '349', 'three hundred and forty-nine dollars')
"""

from __future__ import annotations

import random

# relation -> templates; the first one is the plain form used for reference answers.
TEMPLATES: dict[str, tuple[str, ...]] = {
    "founded_by": ("{S} was founded by {v}.", "{S} was started by {v}.", "{S} owes its existence to its founder, {v}."),
    "founded_year": ("{S} was founded in {v}.", "{S} has been in business since {v}.",
                     "{S} opened its first workshop in {v}."),
    "headquartered_in": ("{S} is headquartered in {v}.", "{S} has its head office in {v}.",
                         "{S} is based in the town of {v}."),
    "employees": ("{S} employs {v} people.", "{S} has a staff of {v}.", "{S} has {v} employees on its payroll."),
    "makes": ("{S} makes the {v}.", "{S} is the maker of the {v}.", "{S} manufactures the {v}."),
    "market_share": ("{S} holds a market share of {v}.", "{S} sells {v} of all such goods in its home market."),
    "born_in": ("{S} was born in {v}.", "{S} is a native of {v}.", "{S} grew up in {v}, the town of {pos} birth."),
    "born_year": ("{S} was born in {v}.", "{S} was born in the year {v}.", "{S} came into the world in {v}."),
    "population": ("{S} has a population of {v}.", "About {v} people live in {name}.", "{S} is home to {v} residents."),
    "region": ("{S} lies in the {v} region.", "{S} belongs to the province of {v}.", "{S} is part of the {v} region."),
    "river": ("{S} lies on the {v}.", "The {v} runs through {name}.", "{S} was built on the banks of the {v}."),
    "town.founded_year": ("{S} was founded in {v}.", "{S} received its town charter in {v}.",
                          "{S} was first settled in {v}."),
    "launch_year": ("{S} was launched in {v}.", "{S} went on sale in {v}.", "{S} first reached the shops in {v}."),
    "price": ("{S} costs {v}.", "{S} sells for {v}.", "{S} retails at {v}."),
    "warranty": ("{S} comes with a warranty of {v}.", "{S} is sold with a guarantee of {v}."),
    "length": ("{S} is {v} long.", "{S} flows for {v} before it ends."),
    "area": ("{S} covers {v}.", "{S} has an area of {v}."),
}

# An older figure, stated in a passage of its own whose ``year`` metadata is that year.
OLD_TEMPLATES: dict[str, tuple[str, ...]] = {
    "employees": ("In {Y}, {name} employed {v} people.", "Back in {Y}, {name} had a staff of {v}."),
    "population": ("In {Y}, {name} had {v} inhabitants.", "A census in {Y} counted {v} residents in {name}."),
    "price": ("In {Y}, {name} cost {v}.", "In {Y}, {name} sold for {v}."),
}

# Two facts in one sentence, when a passage states both.
PAIR_TEMPLATES: dict[tuple[str, str], tuple[str, ...]] = {
    ("born_in", "born_year"): ("{S} was born in {born_in} in {born_year}.",),
    ("founded_by", "founded_year"): ("{S} was founded by {founded_by} in {founded_year}.",),
}

# Sentences without a checkable fact, so passages read like prose and not like a table.
INTROS: dict[str, tuple[str, ...]] = {
    "company": ("{S} is a privately held company.", "{S} is a family-run manufacturer.",
                "{S} is a mid-sized engineering firm."),
    "person": ("{S} is an engineer and entrepreneur.", "{S} is a designer who went into business.",
               "{S} trained as a mechanic before starting out on {pos} own."),
    "town": ("{S} is a market town.", "{S} is a small town known for its weekly fair.",
             "{S} is a former mining town."),
    "product": ("{S} is a household appliance.", "{S} is popular with small workshops."),
    "river": ("{S} is a slow, winding river.",),
    "region": ("{S} is a largely rural region.",),
}

PRONOUNS: dict[str, tuple[str, ...]] = {
    "company": ("It", "The company", "The firm"),
    "town": ("It", "The town"),
    "product": ("It",),
    "river": ("It", "The river"),
    "region": ("It", "The region"),
}

_UNITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
          "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")  # fmt: skip
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")


def spell(n: int) -> str:
    """``n`` (0 to 999,999) in English words, British style ("three hundred and five")."""
    if not 0 <= n < 1_000_000:
        raise ValueError(f"cannot spell {n}")
    if n < 20:
        return _UNITS[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else f"-{_UNITS[n % 10]}")
    if n < 1000:
        rest = n % 100
        return f"{_UNITS[n // 100]} hundred" + ("" if rest == 0 else f" and {spell(rest)}")
    rest = n % 1000
    head = f"{spell(n // 1000)} thousand"
    if rest == 0:
        return head
    return f"{head} and {spell(rest)}" if rest < 100 else f"{head} {spell(rest)}"


_UNIT_WORDS = {"count": "", "price": "dollars", "percent": "percent", "duration": "years", "length": "kilometres",
               "area": "square kilometres"}


def surfaces(kind: str, value: int) -> tuple[str, ...]:
    """Every way the world writes ``value`` of ``kind`` (year, count, price, percent, …), plain first."""
    if kind == "year":
        return (str(value),)
    digits = [f"{value:,}", str(value)] if value >= 1000 else [str(value)]
    words = spell(value)
    unit = _UNIT_WORDS[kind]
    if kind == "price":
        forms = [f"${d}" for d in digits] + [f"{d} dollars" for d in digits] + digits + [f"{words} dollars"]
    elif kind == "percent":
        forms = [f"{value}%", f"{value} percent", str(value), f"{words} percent"]
    elif unit:
        forms = [f"{d} {unit}" for d in digits] + digits + [f"{words} {unit}"]
    else:
        forms = [*digits, words]
    return tuple(dict.fromkeys(forms))


def written(kind: str, value: int, rng: random.Random) -> str:
    """One surface of ``value`` for a passage: words for small or round numbers now and then."""
    forms = surfaces(kind, value)
    if kind == "year":
        return forms[0]
    wordy = value <= 20 or (value % 100 == 0 and value < 100_000)
    if wordy and rng.random() < 0.5:
        return forms[-1]
    if kind == "count":
        return rng.choice(forms[:-1])  # "12,400" or "12400"
    return rng.choice([f for f in forms[:-1] if not f.replace(",", "").isdigit()])  # keep the unit
