"""Writing systems: which characters are Han ideographs, which are written without spaces, how
pieces of text are joined, and which language a text is in.

Every range of CJK characters flare uses is spelled here once; the sentence splitter, the word
rules, the analyzers and the chunker all build on :data:`HAN` and :func:`is_wide`.

    >>> is_han("北"), is_wide("。"), is_wide("a")
    (True, True, False)
    >>> join_words(["Paris", "is", "big.", "它", "很大。", "Bye."])
    'Paris is big. 它很大。Bye.'
"""

from __future__ import annotations

import re
from collections.abc import Iterable

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
"""Character ranges of Han ideographs (CJK unified, extension A to G, compatibility)."""

HAN_RE = re.compile(f"[{HAN}]")

WIDE = f"{HAN}\u3000-\u303f\u3040-\u30ff\uff00-\uffef"
"""Characters written without spaces around them: Han, CJK punctuation and symbols
(U+3000-U+303F), kana, and full-width forms."""

_WIDE_RE = re.compile(f"[{WIDE}]")
_PUNCT_RE = re.compile("[\u3000-\u303f\uff00-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]")  # CJK, full-width


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
