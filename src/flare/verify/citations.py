"""Pick which of a step's documents a regenerated sentence actually draws on (C4).

A sentence regenerated from k documents rarely uses all k. Citing only the documents that share
content words with the sentence (:func:`flare.text.char_content_words`: each Han character
a word, no segmentation) makes each ``[n]`` point at a passage that really contains the cited
words; when no document overlaps (the model paraphrased heavily) all of the step's
documents are cited, since the sentence was still generated from them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from flare.text import char_content_words
from flare.types import Passage


def supporting(sentence: str, docs: Sequence[Passage], *, min_ratio: float = 0.5) -> list[int]:
    """Indexes into ``docs`` of the passages the sentence draws on, best first.

    Each shared word counts by how rare it is among the step's documents (a word every document
    contains, like the company's name, tells nothing about which one was used). Documents scoring
    at least ``min_ratio`` of the best are cited.
    """
    words = char_content_words(sentence)
    if not docs:
        return []
    doc_words = [char_content_words(f"{d.title} {d.text}") for d in docs]
    if not words:
        return list(range(len(docs)))
    n = len(docs)
    df = {w: sum(1 for dw in doc_words if w in dw) for w in words}
    scores = [
        (sum(math.log(n / df[w]) for w in words & dw), i) for i, dw in enumerate(doc_words)
    ]
    best = max(score for score, _ in scores)
    if best <= 0:
        return list(range(len(docs)))
    return [i for score, i in sorted(scores, key=lambda x: -x[0]) if score >= min_ratio * best]
