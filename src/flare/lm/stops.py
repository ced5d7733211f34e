"""Stop sequences, shared by every backend: cut text *and* its tokens so they still join."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from flare.types import FinishReason, TokenLogprob


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


def append_piece(
    tokens: list[TokenLogprob],
    text: str,
    piece: TokenLogprob,
    stop: Sequence[str],
    stop_when: Callable[[str], bool] | None,
) -> tuple[list[TokenLogprob], str, FinishReason | None]:
    """Add one generated piece (whole characters) and say whether generation ends there.

    Returns the tokens and text so far, cut before a stop sequence if one appeared (finish
    ``"stop"``), and ``"sentence"`` when ``stop_when`` says the text is complete; ``None`` to go on.
    ``tokens`` is extended in place unless a stop cuts it.
    """
    before = len(text)
    tokens.append(piece)
    text += piece.text
    cut = cut_at_stop(tokens, text, stop, before)
    if cut is not None:
        return cut[0], cut[1], "stop"
    if stop_when is not None and stop_when(text):
        return tokens, text, "sentence"
    return tokens, text, None
