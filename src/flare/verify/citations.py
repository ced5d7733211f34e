"""Pick which of a step's documents a regenerated sentence actually draws on (C4).

A sentence regenerated from k documents rarely uses all k. Citing only the documents that share
content words with the sentence makes each ``[n]`` point at a passage that really contains the
cited words; when no document overlaps (the model paraphrased heavily) all of the step's
documents are cited, since the sentence was still generated from them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from flare.types import Passage

_WORD = re.compile(r"[\u3400-\u9fff]|[^\W_]+", re.UNICODE)
_STOP = frozenset(
    [
        "a", "an", "the", "of", "in", "on", "at", "to", "for", "and", "or", "but", "is", "are", "was", "were", "be",
        "been", "by", "with", "as", "from", "that", "this", "it", "its", "he", "she", "they", "his", "her", "their",
        "which", "who", "whom", "what", "when", "where", "how", "than", "then", "so", "not", "no",
        "也", "的", "了", "是", "在", "和", "与", "及", "或", "就", "都", "而", "其", "这", "那", "有"
    ]
)


def content_words(text: str) -> set[str]:
    """Lower-cased words (and single CJK characters) that carry content."""
    return {w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in _STOP}


def supporting(sentence: str, docs: Sequence[Passage], *, min_share: float = 0.25) -> list[int]:
    """Indexes into ``docs`` of the passages the sentence draws on, best first."""
    words = content_words(sentence)
    if not docs:
        return []
    if not words:
        return list(range(len(docs)))
    shares = []
    for i, d in enumerate(docs):
        overlap = len(words & content_words(f"{d.title} {d.text}")) / len(words)
        shares.append((overlap, i))
    chosen = [i for share, i in sorted(shares, key=lambda x: -x[0]) if share >= min_share]
    return chosen or list(range(len(docs)))
