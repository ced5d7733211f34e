"""Numbers in every form a text states them: digits, English number words, Chinese numerals.

``1,642``, ``5.5``, ``ten``, ``twenty-five``, ``3 million``, ``十``, ``十二``, ``一百零五``,
``二〇二六``, ``两``, ``3万`` all become numeric values, so "ten working days" and "10 working
days" state the same number.

    >>> [n.value for n in numbers("It took ten days, not 1,642 or 十二 or 二〇二六年.")]
    [10.0, 1642.0, 12.0, 2026.0]
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Number:
    """A number stated in a text, its value, and where it is written."""

    value: float
    start: int
    end: int
    text: str


_EN_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
_EN_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_ZH_DIGITS = {"〇": 0, "零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
              "九": 9}  # fmt: skip
_ZH_UNITS = {"十": 10, "百": 100, "千": 1_000}
_ZH_BIG = {"万": 10_000, "亿": 100_000_000}

_EN_WORD = "|".join(sorted([*_EN_UNITS, *_EN_SCALES], key=len, reverse=True))
_DIGITS = r"\d+(?:[,，]\d{3})*(?:\.\d+)?"
_NUMBER = re.compile(
    rf"(?P<digits>{_DIGITS})(?:\s*(?P<scale>{'|'.join(_EN_SCALES)})\b|(?P<zhscale>[万亿]))?"
    rf"|(?P<en>\b(?:{_EN_WORD})(?:(?:[\s-]+(?:and[\s-]+)?)(?:{_EN_WORD}))*\b)"
    rf"|(?P<zh>[〇零一二两三四五六七八九十百千万亿]+)",
    re.IGNORECASE,
)


def numbers(text: str) -> list[Number]:
    """Every number in ``text`` (digits, English number words, Chinese numerals), in order.

    A Chinese run made of digits only (``二〇二六``) is read digit by digit, as years are; with
    units (``一百零五``) it is read as a quantity. A lone ``一``/``两`` inside a word (``一起``)
    is not counted: single characters count only as ``十``/``百``/``千`` or before a measure.
    """
    norm = unicodedata.normalize("NFKC", text)
    if len(norm) != len(text):  # keep positions valid: only use NFKC when it is length-preserving
        norm = text
    out: list[Number] = []
    for m in _NUMBER.finditer(norm):
        value: float | None
        if m.group("digits"):
            value = float(m.group("digits").replace(",", "").replace("，", ""))
            if m.group("scale"):
                value *= _EN_SCALES[m.group("scale").lower()]
            elif m.group("zhscale"):
                value *= _ZH_BIG[m.group("zhscale")]
        elif m.group("en"):
            value = _english_value(m.group("en"))
        else:
            value = _chinese_value(m.group("zh"), norm, m.end())
        if value is not None:
            out.append(Number(value, m.start(), m.end(), text[m.start() : m.end()]))
    return out


@functools.lru_cache(maxsize=4096)
def whole_number(text: str) -> float | None:
    """The value of ``text`` when it is exactly one number in any form, else None.

    >>> whole_number("二〇二六"), whole_number("ten"), whole_number("10 days")
    (2026.0, 10.0, None)
    """
    found = numbers(text)
    return found[0].value if found and found[0].text == text else None


def _english_value(phrase: str) -> float | None:
    if phrase.lower() == "one":
        return None  # "one of the …", "the one who …": a pronoun far more often than a count
    total, current = 0, 0
    for w in re.split(r"[\s-]+", phrase.lower()):
        if w == "and":
            continue
        if w in _EN_UNITS:
            current += _EN_UNITS[w]
        elif w == "hundred":
            current = max(current, 1) * 100
        else:
            total += max(current, 1) * _EN_SCALES[w]
            current = 0
    return float(total + current)


_ZH_MEASURE = re.compile(r"[个年月日天岁次名人元位号周倍家项条层台辆]")


def _chinese_value(run: str, text: str, end: int) -> float | None:
    if len(run) == 1 and run in "一二两三四五六七八九〇零" and not _ZH_MEASURE.match(text[end : end + 1]):
        return None  # 一起, 统一: a lone digit character is a number only before a measure word
    if all(c in _ZH_DIGITS for c in run):
        return float("".join(str(_ZH_DIGITS[c]) for c in run)) if len(run) > 1 else float(_ZH_DIGITS[run])
    total, section, digit = 0, 0, 0
    for c in run:
        if c in _ZH_DIGITS:
            digit = _ZH_DIGITS[c]
        elif c in _ZH_UNITS:
            section += max(digit, 1) * _ZH_UNITS[c]
            digit = 0
        else:  # 万 / 亿
            total = (total + section + digit) * _ZH_BIG[c]
            section, digit = 0, 0
    return float(total + section + digit)
