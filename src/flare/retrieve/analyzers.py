"""Tokenisation for BM25, English and Chinese in the same text and the same index.

tantivy-py cannot call a Python tokenizer, so flare analyses text here and gives tantivy the
tokens joined by spaces, indexed with tantivy's ``whitespace`` tokenizer. Documents and
queries go through the very same :func:`analyze`, so a query token can only match the token the
indexer produced for the same word.

Rules of the ``en-zh-1`` analyzer:

* NFKC normalisation (full-width ``ＦＬＡＲＥ`` becomes ``FLARE``), then case folding.
* Runs of Han characters are segmented with jieba in search mode, which emits whole words and
  their sub-words (``北京大学`` gives ``北京``, ``大学``, ``北京大学``), so a query for
  ``北京`` still finds ``北京大学`` whichever way the two texts were segmented.
* Any other run of letters or digits, in any script, is one token; punctuation, symbols, emoji
  and ``_`` separate tokens.
* A deliberately small stopword list drops the function words that carry no meaning for
  retrieval; BM25's IDF already discounts the rest, and a long list would hurt short queries.

Example::

    >>> analyze("FLARE 在2023年提出了主动检索")
    ['flare', '在', '2023', '年', '提出', '主动', '检索']
"""

from __future__ import annotations

import re
import unicodedata

from flare.text import HAN

ANALYZER_NAME = "en-zh-1"
"""Recorded in every index; an index built by another analyzer must be rebuilt."""

_TOKEN = re.compile(rf"(?P<han>[{HAN}]+)|(?P<word>[^\W_{HAN}]+)")

# Tokens this long are hashes, base64 or URLs glued together: they never help ranking and
# tantivy refuses terms over 64 KiB.
MAX_TOKEN_CHARS = 64

STOPWORDS_EN = frozenset(
    [
        "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "its",
        "of", "on", "or", "s", "t", "that", "the", "this", "to", "was", "were", "with",
    ]
)  # fmt: skip
STOPWORDS_ZH = frozenset(["的", "了", "吗", "呢", "吧", "啊"])


def analyze(text: str) -> list[str]:
    """The BM25 tokens of ``text``, in order, duplicates kept (term frequency matters)."""
    tokens: list[str] = []
    for match in _TOKEN.finditer(unicodedata.normalize("NFKC", text).casefold()):
        run = match.group()
        if match.lastgroup == "han":
            tokens.extend(t for t in _segment(run) if t not in STOPWORDS_ZH)
        elif run not in STOPWORDS_EN and len(run) <= MAX_TOKEN_CHARS:
            tokens.append(run)
    return tokens


def _segment(run: str) -> list[str]:
    """Split a run of Han characters into words with jieba (imported only when needed)."""
    if len(run) == 1:
        return [run]
    import rjieba

    words: list[str] = rjieba.cut_for_search(run)
    return [w for w in words if w.strip()]
