"""Token helpers shared by the in-process backends (llama.cpp and transformers).

Example::

    common_prefix([1, 2, 3], [1, 2, 4])   # 2: how much of a cached prompt a new one keeps
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from flare.types import TokenLogprob

__all__ = ["common_prefix", "trim_to"]


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """The number of leading token ids ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0]) if diff.size else n


def trim_to(tokens: list[TokenLogprob], text: str) -> list[TokenLogprob]:
    """Drop the characters a boundary token took from the prompt, so the tokens spell ``text``.

    Tokens that do not end with ``text`` (or spell less than it) are returned unchanged.
    """
    joined = "".join(t.text for t in tokens)
    extra = len(joined) - len(text)
    if extra <= 0 or not joined.endswith(text):
        return tokens
    out: list[TokenLogprob] = []
    for t in tokens:
        if not out and extra >= len(t.text):
            extra -= len(t.text)  # wholly prompt text
            continue
        out.append(TokenLogprob(t.text[extra:], t.logprob) if not out and extra else t)
    return out
