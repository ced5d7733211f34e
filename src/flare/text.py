"""Text rules shared by every layer: CJK ranges, joining, words, content words and numbers.

A leaf module (it imports nothing from flare), so the engine, the query formers, the analyzers
and the verifier all agree on what a Chinese character, a word and a number are.

* Words: runs of letters or digits (``FX-200`` and ``GB/T`` stay whole: a hyphen or slash
  between letters/digits joins them), and Chinese runs segmented by jieba into whole words.
* Numbers: ``1,642``, ``5.5``, ``ten``, ``twenty-five``, ``3 million``, ``十``, ``十二``,
  ``一百零五``, ``二〇二六``, ``两``, ``3万`` all become numeric values, so "ten working days" and
  "10 working days" state the same number.

Example::

    >>> [n.value for n in numbers("It took ten days, not 1,642 or 十二 or 二〇二六年.")]
    [10.0, 1642.0, 12.0, 2026.0]
    >>> sorted(content_words("The Angara flows out of Lake Baikal."))
    ['angara', 'baikal', 'flows', 'lake', 'out']
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
"""Character ranges of Han ideographs (CJK unified, extension A to G, compatibility)."""

HAN_RE = re.compile(f"[{HAN}]")

# Characters after which no space is written when words are joined: Han, CJK punctuation and
# symbols (U+3000-U+303F), kana, and full-width forms.
_WIDE = f"{HAN}\u3000-\u303f\u3040-\u30ff\uff00-\uffef"
_WIDE_RE = re.compile(f"[{_WIDE}]")
_PUNCT_RE = re.compile("[\u3000-\u303f\uff00-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]")  # CJK, full-width

STOPWORDS = frozenset(
    [
        "a", "an", "the", "of", "in", "on", "at", "to", "for", "and", "or", "but", "is", "are", "was", "were", "be",
        "been", "by", "with", "as", "from", "that", "this", "it", "its", "he", "she", "they", "his", "her", "their",
        "which", "who", "whom", "what", "when", "where", "how", "than", "then", "so", "not", "no",
        "也", "的", "了", "是", "在", "和", "与", "及", "或", "就", "都", "而", "其", "这", "那", "有",
    ]
)  # fmt: skip
"""Function words that never carry a fact (English and Chinese)."""

# A word: letters/digits, optionally joined by one hyphen, slash, dot or apostrophe to more
# letters/digits ("FX-200", "GB/T", "U.S", "O'Brien"); or a run of Han characters (segmented).
_WORD = re.compile(rf"(?P<han>[{HAN}]+)|(?P<word>[^\W_{HAN}]+(?:[-/.'’][^\W_{HAN}]+)*)")


def is_han(ch: str) -> bool:
    """Is ``ch`` a Han ideograph?"""
    return bool(HAN_RE.match(ch))


def is_wide(ch: str) -> bool:
    """Is ``ch`` written without spaces around it (Han, kana, CJK or full-width punctuation)?"""
    return bool(_WIDE_RE.match(ch))


def join_words(parts: Iterable[str]) -> str:
    """Join pieces with single spaces, except between Chinese pieces and after full-width
    punctuation (``。``, ``，`` …), which carries its own spacing. Words, queries and the
    sentences of an answer are all joined this way.

    >>> join_words(["Paris", "is", "big.", "它", "很大。", "Bye."])
    'Paris is big. 它很大。Bye.'
    """
    out = ""
    for p in parts:
        p = p.strip()
        if not p:
            continue
        if out and not (is_wide(out[-1]) and is_wide(p[0])) and not _PUNCT_RE.match(out[-1]):
            out += " "
        out += p
    return out


@dataclass(frozen=True, slots=True)
class Span:
    """A piece of a text: its characters ``text[start:end]``."""

    text: str
    start: int
    end: int


def word_spans(text: str) -> list[Span]:
    """Every word of ``text`` with its position; Chinese runs are cut into jieba words."""
    out: list[Span] = []
    for m in _WORD.finditer(text):
        if m.lastgroup == "han":
            pos = m.start()
            for w in _segment(m.group()):
                out.append(Span(w, pos, pos + len(w)))
                pos += len(w)
        else:
            out.append(Span(m.group(), m.start(), m.end()))
    return out


def words(text: str) -> list[str]:
    """The words of ``text``, in order (see :func:`word_spans`)."""
    return [s.text for s in word_spans(text)]


def fold(word: str) -> str:
    """The form words are compared in: NFKC, case-folded, curly apostrophes straightened."""
    return unicodedata.normalize("NFKC", word).casefold().replace("’", "'")


def content_words(text: str) -> set[str]:
    """Folded words of ``text`` that may carry content (function words removed)."""
    return {w for w in (fold(s) for s in words(text)) if w not in STOPWORDS}


def _segment(run: str) -> list[str]:
    """Whole jieba words of a Han run (precise mode: the words partition the run)."""
    if len(run) == 1:
        return [run]
    import rjieba

    cut: list[str] = rjieba.cut(run)
    return [w for w in cut if w]


# -- numbers -----------------------------------------------------------------------------------


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


def repeated_ngram(text: str, n: int) -> int | None:
    """Where ``text`` starts saying again a run of ``n`` words it already said, or None.

    Small models fall into loops ("born in Vessa, in the village of Vessa in the village of
    Vessa …"); the offset returned is the start of the first repeated run's second occurrence, so
    cutting there keeps everything said once.

    >>> t = "He was born in Vessa, in the village of Vessa, in the village of Vessa."
    >>> t[: repeated_ngram(t, 4)]
    'He was born in Vessa, in the village of '
    """
    if n < 1:
        return None
    spans = word_spans(text)
    folded = [fold(s.text) for s in spans]
    seen: set[tuple[str, ...]] = set()
    for i in range(len(spans) - n + 1):
        gram = tuple(folded[i : i + n])
        if gram in seen:
            return spans[i].start
        seen.add(gram)
    return None


# -- language ----------------------------------------------------------------------------------


def language_of(text: str) -> str:
    """``"zh"`` when a third or more of the letters in ``text`` are Han ideographs, else ``"en"``.

    A third, not a half: Chinese questions name products and codes in Latin letters
    ("QL-300 的防护等级是多少？").

    >>> language_of("QL-300 的防护等级是多少？"), language_of("How long is the QL-300 warranty?")
    ('zh', 'en')
    """
    letters = [c for c in text if c.isalpha()]
    han = sum(1 for c in letters if HAN_RE.match(c))
    return "zh" if letters and han * 3 >= len(letters) else "en"
