"""Tokenisation for BM25, English and Chinese in the same text and the same index.

tantivy-py cannot call a Python tokenizer, so flare analyses text here and gives tantivy the
tokens joined by spaces, indexed with tantivy's ``whitespace`` tokenizer. Documents and
queries go through the very same :func:`analyze`, so a query token can only match the token the
indexer produced for the same word.

Rules of the ``en-zh-2`` analyzer:

* NFKC normalisation (full-width ``ＦＬＡＲＥ`` becomes ``FLARE``), then case folding.
* Runs of Han characters are segmented with jieba in search mode, which emits whole words and
  their sub-words (``北京大学`` gives ``北京``, ``大学``, ``北京大学``), so a query for
  ``北京`` still finds ``北京大学`` whichever way the two texts were segmented.
* Any other run of letters or digits, in any script, is one token; punctuation, symbols, emoji
  and ``_`` separate tokens.
* Identifiers are also kept whole, so a question that names one finds the passage that states
  exactly it first: product codes and model numbers (``FX-200``, ``QL-210``), document numbers
  (``GB/T 7714-2015``, ``差旅-2026-03`` — a Chinese prefix is its last jieba word), versions and
  decimals (``v3.2``, ``2.4``) and dates (``2026-03-15``) give one token each (``fx-200``,
  ``gb/t``, ``7714-2015``, ``差旅-2026-03``) *before* their parts, which are still indexed so a
  partial mention ("QL 300") matches too. An identifier is a run of letters/digits joined by
  ``-``, ``/`` or ``.`` with a digit in it, or made only of capitals and digits (``GB/T``);
  "FLARE-style" and "e.g." are not. ``38,000`` and ``38000`` are the same token. In a query, an
  identifier weighs :data:`IDENTIFIER_BOOST` times a word (:func:`is_identifier` tells them apart).
* A deliberately small stopword list drops the function words that carry no meaning for
  retrieval; BM25's IDF already discounts the rest, and a long list would hurt short queries.

Example::

    >>> analyze("FLARE 在2023年提出了主动检索")
    ['flare', '在', '2023', '年', '提出', '主动', '检索']
    >>> analyze("按照差旅-2026-03，QL-210 售价38,000元")
    ['差旅-2026-03', '按照', '差旅', '2026', '03', 'ql-210', 'ql', '210', '售价', '38000', '元']
"""

from __future__ import annotations

import re
import unicodedata

from flare.text import HAN

ANALYZER_NAME = "en-zh-2"
"""Recorded in every index; an index built by another analyzer must be rebuilt."""

_TOKEN = re.compile(rf"(?P<han>[{HAN}]+)|(?P<word>[^\W_{HAN}]+)")
# Linear time on any text: a match may only start where a run starts (the lookbehinds) and runs
# are taken whole (possessive), so a 20,000-letter run is one step, not 20,000 retries.
_IDENT = re.compile(
    rf"(?P<grouped>(?<![\d,，])\d{{1,3}}(?:[,，]\d{{3}})+(?:\.\d+)?)(?![\d,，])"
    rf"|(?P<ident>(?:(?<![{HAN}])[{HAN}]++|(?<![^\W_{HAN}])[^\W_{HAN}]++)(?:[-/.][^\W_{HAN}]++)+)"
)
_HAN_START = re.compile(f"^[{HAN}]+")

# Tokens this long are hashes, base64 or URLs glued together: they never help ranking and
# tantivy refuses terms over 64 KiB.
MAX_TOKEN_CHARS = 64

IDENTIFIER_BOOST = 5.0
"""How much more a query's identifier token weighs than a word. Without a boost a passage that
repeats the question's other words outranks the one that states the exact code; 5 puts the code's
passage first in ``tests/retrieve/test_identifiers.py``, whose decoys repeat every other word."""

STOPWORDS_EN = frozenset(
    [
        "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "its",
        "of", "on", "or", "s", "t", "that", "the", "this", "to", "was", "were", "with",
    ]
)  # fmt: skip
STOPWORDS_ZH = frozenset(["的", "了", "吗", "呢", "吧", "啊"])


def analyze(text: str) -> list[str]:
    """The BM25 tokens of ``text``, in order, duplicates kept (term frequency matters)."""
    norm = unicodedata.normalize("NFKC", text)
    whole: list[tuple[int, str]] = []  # identifier tokens and where they start, in text order
    grouped: list[tuple[int, int]] = []  # "38,000": its parts are replaced, not kept
    for m in _IDENT.finditer(norm):
        if m.lastgroup == "grouped":
            whole.append((m.start(), re.sub("[,，]", "", m.group())))
            grouped.append(m.span())
        elif (ident := _identifier(m.group())) is not None:
            whole.append((m.end() - len(ident), ident.casefold()))
    tokens: list[str] = []
    w = g = 0  # the next identifier and the next grouped number: both lists are in text order
    for match in _TOKEN.finditer(norm):
        start, end = match.span()
        run = match.group().casefold()
        # An identifier goes before the words it starts with; a Chinese-prefixed one starts inside
        # a Han run ("按照差旅-2026-03"), whose search-mode words overlap and carry no positions.
        stop = end if match.lastgroup == "han" else start + 1
        while w < len(whole) and whole[w][0] < stop:
            if len(whole[w][1]) <= MAX_TOKEN_CHARS:
                tokens.append(whole[w][1])
            w += 1
        if match.lastgroup == "han":
            tokens.extend(t for t in _segment(run) if t not in STOPWORDS_ZH)
            continue
        while g < len(grouped) and grouped[g][1] <= start:
            g += 1
        if g < len(grouped) and grouped[g][0] <= start:
            continue
        if run not in STOPWORDS_EN and len(run) <= MAX_TOKEN_CHARS:
            tokens.append(run)
    return tokens


def is_identifier(token: str) -> bool:
    """Is ``token`` (from :func:`analyze`) a whole identifier such as ``fx-210`` or ``差旅-2026-03``?"""
    return any(c in "-/." for c in token)


def _identifier(run: str) -> str | None:
    """The identifier a joined run names (a Chinese prefix cut to its last word), or None."""
    pieces = re.split(r"[-/.]", run)
    head = _HAN_START.match(run)
    if head:
        if not any(c.isdigit() for c in run):
            return None
        return _segment(head.group())[-1] + run[head.end() :]
    if any(c.isdigit() for c in run) or all(p.isupper() or p.isdigit() for p in pieces):
        return run
    return None


def _segment(run: str) -> list[str]:
    """Split a run of Han characters into words with jieba (imported only when needed)."""
    if len(run) == 1:
        return [run]
    import rjieba

    words: list[str] = rjieba.cut_for_search(run)
    return [w for w in words if w.strip()]
