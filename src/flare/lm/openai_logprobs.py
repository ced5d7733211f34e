"""Aligning an OpenAI-style server's token logprobs with its text, in whole characters.

Servers report tokens in one of three shapes: per-token ``bytes`` (llama.cpp's newer format),
token strings with ``text_offset`` (the OpenAI legacy format, which llama_cpp.server fills with
empty strings for the byte tokens of a split character), or plain token strings (vLLM). Each is
turned into *pieces* — whole characters with the summed log-probability of the tokens that formed
them — so the result matches what the in-process llama.cpp backend reports for the same tokens.
"""

from __future__ import annotations

import codecs
import itertools
import time
from collections.abc import Mapping, Sequence
from typing import Any

from flare.errors import ModelError
from flare.lm.base import StopWhen
from flare.types import Completion, FinishReason, TokenLogprob

__all__ = [
    "Piece",
    "apply_stop_when",
    "cap",
    "completion",
    "finish_reason",
    "first_choice",
    "merge_pieces",
    "pieces_of",
    "streamed_tokens",
]

Piece = tuple[str, float, int]
"""Whole characters, summed logprob, and how many raw tokens were merged into it."""

SERVER_HINT = "check that the server is up and serves /v1/completions (see docs/backends.md)"


def merge_pieces(raw: Sequence[tuple[str, float]]) -> list[Piece]:
    """Merge ``(text, logprob)`` tokens so each piece is whole characters (empty texts carry over)."""
    out: list[Piece] = []
    pending, count = 0.0, 0
    for text, logprob in raw:
        pending, count = pending + logprob, count + 1
        if text:
            out.append((text, pending, count))
            pending, count = 0.0, 0
    return out


def pieces_of(choice: Mapping[str, Any], text: str, want: bool) -> tuple[str, list[Piece], bool]:
    """``text`` and its whole-character pieces with logprobs, from any of the known formats.

    The text comes back without a character that llama.cpp's server left unfinished
    (:func:`_join_tail`); the flag says whether a stop sequence cut the last piece short.
    """
    lp = choice.get("logprobs")
    if not want or (not text and not lp):  # llama.cpp sends null logprobs when a stop came first
        return text, [], False
    if not isinstance(lp, dict) or not lp:
        raise ModelError("the server returned no logprobs", "FLARE direct needs token logprobs; "
                         "use a server that returns them (llama.cpp, vLLM)")  # fmt: skip
    content = lp.get("content")
    if isinstance(content, list):  # llama.cpp's newer format: per token id, token, bytes
        pieces = merge_pieces(_content_tokens(content))
        spelled = "".join(p for p, _, _ in pieces)
        stopped = False  # whether the last piece ends where a stop string cut a token
        if len(text) > len(spelled) and text.startswith(spelled):
            tail = text[len(spelled) :]
            pieces, text = _join_tail(pieces, spelled, tail)
            stopped = choice.get("finish_reason") == "stop" and "\ufffd" not in tail
        pieces, truncated = _cut(pieces, text)
        return text, pieces, truncated or stopped
    tokens = [str(t) for t in lp.get("tokens") or []]
    logprobs = [float(x) if x is not None else 0.0 for x in lp.get("token_logprobs") or []]
    offsets = lp.get("text_offset") or []
    if len(logprobs) != len(tokens):
        raise ModelError("the server's logprobs do not line up with its tokens", SERVER_HINT)
    if "".join(tokens).startswith(text):
        return text, *_cut(merge_pieces(list(zip(tokens, logprobs, strict=True))), text)
    if len(offsets) == len(tokens) and tokens and _monotonic(offsets):
        base = int(offsets[0])  # character offsets; slicing recovers what byte tokens formed
        ends = [int(o) - base for o in offsets[1:]] + [len(text)]
        starts = [int(o) - base for o in offsets]
        raw = [(text[s:e] if s < len(text) else "", lp_) for s, e, lp_ in
               zip(starts, ends, logprobs, strict=True)]  # fmt: skip
        if all(t in piece or "\ufffd" in t for (piece, _), t in zip(raw, tokens, strict=True)
               if piece and t):  # fmt: skip
            return text, *_cut(merge_pieces(raw), text)
    raise ModelError("cannot align the server's tokens with its text", SERVER_HINT)


def streamed_tokens(logprobs: object) -> list[tuple[str, float]]:
    """``(token text, logprob)`` of one streamed chunk, from either format.

    llama.cpp's server streams ``content`` entries with each token's ``bytes`` (decoded here; a
    character split over chunks decodes to "", and the caller keeps such tokens until text comes),
    llama_cpp.server and vLLM stream ``tokens`` with ``token_logprobs``.
    """
    if not isinstance(logprobs, dict):
        return []
    content = logprobs.get("content")
    if isinstance(content, list):
        return _content_tokens(content)
    tokens = [str(t) for t in logprobs.get("tokens") or []]
    values = [float(x) for x in logprobs.get("token_logprobs") or [] if x is not None]
    return list(zip(tokens, values, strict=False)) if len(tokens) == len(values) else [("", v) for v in values]


def _join_tail(pieces: list[Piece], spelled: str, tail: str) -> tuple[list[Piece], str]:
    """Text that llama.cpp's server (completions or chat) sent with no ``content`` entry, joined to the last piece.

    The server reports a token only once it completes a character and is not cut by a stop
    string, so two ends of a text have no entry: the part before a stop string of the token it
    cut (" " of " when" under stop "wh"), and a character whose bytes ``max_tokens`` cut off,
    written as U+FFFD, with the whole characters before it in the same token. The in-process
    backend keeps that part and drops the unfinished character; so does this. The part joins the
    last piece, whose log-probability then leaves out the part's token (the server's own rule for
    a character of several tokens: the probability of its last token), or is a piece of its own
    with log-probability 0 when the server reported no token at all.
    """
    kept = tail.split("\ufffd", 1)[0]
    if not kept:
        return pieces, spelled
    if not pieces:
        return [(kept, 0.0, 0)], kept
    last, logprob, n = pieces[-1]
    return [*pieces[:-1], (last + kept, logprob, n)], spelled + kept


def _cut(pieces: list[Piece], text: str) -> tuple[list[Piece], bool]:
    """Keep the pieces covering ``text`` (the server may report tokens past a stop sequence).

    The flag says whether the last piece was cut short by a stop sequence.
    """
    out: list[Piece] = []
    pos, truncated = 0, False
    for piece, logprob, n in pieces:
        if pos >= len(text):
            break
        keep = piece[: len(text) - pos]
        if text[pos : pos + len(keep)] != keep:
            raise ModelError("the server's tokens do not spell its text", SERVER_HINT)
        out.append((keep, logprob, n))
        truncated = len(keep) < len(piece)
        pos += len(keep)
    if pos != len(text):
        raise ModelError("the server's tokens cover less than its text", SERVER_HINT)
    return out, truncated


def apply_stop_when(
    text: str,
    pieces: list[Piece],
    finish: FinishReason,
    stop_when: StopWhen | None,
    want: bool,
    truncated: bool,
) -> tuple[str, list[Piece], FinishReason]:
    """Cut at the first piece after which ``stop_when`` holds (character steps without logprobs).

    A last piece cut short by a stop sequence is not checked: generating it hit the stop first,
    and the in-process backend checks ``stop`` before ``stop_when`` as well.
    """
    if stop_when is None:
        return text, pieces, finish
    units = pieces if want else [(ch, 0.0, 1) for ch in text]
    so_far = ""
    for i, (piece, _, _) in enumerate(units):
        so_far += piece
        if truncated and i == len(units) - 1:
            break
        if stop_when(so_far):
            return so_far, list(units[: i + 1]) if want else [], "sentence"
    return text, pieces, finish


def _monotonic(offsets: Sequence[Any]) -> bool:
    values = [o for o in offsets if isinstance(o, int)]
    return len(values) == len(offsets) and all(a <= b for a, b in itertools.pairwise(values))


def cap(
    text: str, pieces: list[Piece], finish: FinishReason, max_tokens: int
) -> tuple[str, list[Piece], FinishReason, int]:
    """Drop a character whose bytes ran past ``max_tokens``; also returns the tokens generated.

    llama_cpp.server keeps generating past ``max_tokens`` to finish a split character; the
    in-process backend stops at ``max_tokens`` and drops the unfinished character instead.
    """
    total = sum(n for _, _, n in pieces)
    if total <= max_tokens:
        return text, pieces, finish, total
    while pieces and total > max_tokens:
        total -= pieces.pop()[2]
    return "".join(p for p, _, _ in pieces), pieces, "length", max_tokens


def completion(
    text: str,
    pieces: list[Piece],
    finish: FinishReason,
    usage: Mapping[str, Any],
    generated: int,
    start: float,
) -> Completion:
    prompt = int(usage.get("prompt_tokens") or 0)
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    evaluated = usage.get("_evaluated", prompt - int(cached or 0))
    tokens = tuple(TokenLogprob(p, min(lp, 0.0)) for p, lp, _ in pieces)
    elapsed = time.perf_counter() - start
    return Completion(text, tokens, finish, prompt, int(evaluated), generated, elapsed)


def first_choice(answer: Mapping[str, Any]) -> dict[str, Any]:
    choices = answer.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ModelError("the server's answer has no choices", SERVER_HINT)
    return choices[0]


def finish_reason(reason: object) -> FinishReason:
    return "length" if reason == "length" else "stop"


def _content_tokens(content: list[Any]) -> list[tuple[str, float]]:
    """``(text, logprob)`` of llama.cpp's ``content`` entries, their ``bytes`` decoded as UTF-8."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return [(decoder.decode(bytes(e["bytes"])) if e.get("bytes") is not None else str(e.get("token") or ""),
             float(e["logprob"])) for e in content]  # fmt: skip
