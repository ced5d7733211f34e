"""Stop sequences, shared by every backend: cut text *and* its tokens so they still join."""

from __future__ import annotations

from collections.abc import Sequence

from flare.types import TokenLogprob


def cut_at_stop(
    tokens: list[TokenLogprob], text: str, stop: Sequence[str], searched: int
) -> tuple[list[TokenLogprob], str] | None:
    """Cut ``text`` and ``tokens`` before the earliest stop sequence, if any is present.

    ``searched`` is how much of ``text`` was already checked, so each step only looks at the new
    end (a stop string may straddle the boundary). A token the cut falls inside keeps its
    log-probability and the part of its text before the stop string, so the tokens still join to
    the text. Returns ``None`` when no stop sequence occurs.
    """
    best = -1
    for s in stop:
        if s:
            i = text.find(s, max(0, searched - len(s) + 1))
            if i != -1 and (best == -1 or i < best):
                best = i
    if best == -1:
        return None
    kept: list[TokenLogprob] = []
    pos = 0
    for t in tokens:
        if pos >= best:
            break
        end = pos + len(t.text)
        kept.append(t if end <= best else TokenLogprob(t.text[: best - pos], t.logprob))
        pos = end
    return kept, text[:best]
