"""Server-sent events: the versioned flare stream and the OpenAI-compatible chunk stream.

Only committed sentences are ever serialised (requirement O2): this module has no way to encode a
draft, because the engine's events carry none. The flare stream (``flare.sse/1``)::

    : flare.sse/1
    event: queued           data: {"v": "flare.sse/1", "position": 2, "queue_depth": 3}
    event: searching        data: {"v": "flare.sse/1", "step": 1, "n_queries": 1}
    event: rewriting        data: {"v": "flare.sse/1", "step": 1}
    event: sentence         data: {"v": "flare.sse/1", "step": 1, "text": "...",
                                   "rendered": "...[1].", "citations": [1], "retrieved": true,
                                   "grounded": true, "support": "supported", "unsupported": [],
                                   "flagged": false, "new_sources": [{"n": 1, "id": ..., "title": ...}]}
    event: done             data: {"v": "flare.sse/1", ...Answer.to_dict()...}
    event: error            data: {"v": "flare.sse/1", "error": {"message", "type", "code"}}

``queued`` comes first, and only, when the request waits for an answer slot.
Lines starting with ``:`` are comments (heartbeats). Every ``data`` is one line of JSON.
The OpenAI stream sends ``chat.completion.chunk`` objects with content deltas and ends with
``data: [DONE]``; progress goes as comments, which OpenAI clients ignore.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from flare.engine.events import Event, Finished, Rewriting, Searching, SentenceAccepted
from flare.types import Answer, Citation, Sentence

SSE_VERSION = "flare.sse/1"
MEDIA_TYPE = "text/event-stream"
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def message(event: str | None, data: Mapping[str, Any] | str) -> bytes:
    """One SSE message; ``data`` is JSON-encoded on a single line unless already a string."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def comment(text: str) -> bytes:
    """An SSE comment line; clients ignore it, proxies see traffic."""
    return f": {' '.join(text.split())}\n\n".encode()


def flare_event(event: Event) -> bytes:
    """The ``flare.sse/1`` message for an engine event."""
    if isinstance(event, Searching):
        return message(event.type, {"v": SSE_VERSION, "step": event.step, "n_queries": event.n_queries})
    if isinstance(event, Rewriting):
        return message(event.type, {"v": SSE_VERSION, "step": event.step})
    if isinstance(event, SentenceAccepted):
        return message(event.type, {"v": SSE_VERSION, "step": event.step, **sentence_dict(event)})
    if isinstance(event, Finished):
        return message(event.type, {"v": SSE_VERSION, **event.answer.to_dict()})
    raise TypeError(f"unknown event {event!r}")  # pragma: no cover


def queued(position: int, depth: int) -> bytes:
    """The ``queued`` progress message: the request waits for a slot (``position`` 1 is next)."""
    return message("queued", {"v": SSE_VERSION, "position": position, "queue_depth": depth})


def flare_error(body: Mapping[str, Any]) -> bytes:
    return message("error", {"v": SSE_VERSION, **body})


def sentence_dict(event: SentenceAccepted) -> dict[str, Any]:
    s = event.sentence
    return {
        "text": s.text,
        "rendered": marked(s),
        "citations": list(s.citations),
        "retrieved": s.retrieved,
        "grounded": s.grounded,
        "support": s.support,
        "unsupported": list(s.unsupported),
        "flagged": s.flagged,
        "new_sources": [source_dict(c) for c in event.new_sources],
    }


def source_dict(c: Citation) -> dict[str, Any]:
    return {"n": c.n, "id": c.passage_id, "title": c.title}


def marked(sentence: Sentence) -> str:
    """The sentence with its ``[n]`` (and ``[?]``) marks, exactly as :meth:`Answer.render` writes it."""
    return Answer("", (sentence,), (), "", "").render_body()


class Delta:
    """Turns committed sentences into text deltas whose concatenation is the rendered answer."""

    def __init__(self) -> None:
        self._sentences: list[Sentence] = []
        self._body = ""

    def add(self, sentence: Sentence) -> str:
        self._sentences.append(sentence)
        body = Answer("", tuple(self._sentences), (), "", "").render_body()
        if not body.startswith(self._body):  # rendering must only ever append
            raise AssertionError("rendered answer is not an extension of what was sent")
        delta, self._body = body[len(self._body) :], body
        return delta

    def finish(self, answer: Answer) -> str:
        """The rest of the rendered answer (its source list and notes) after the last sentence."""
        full = answer.render()
        return full[len(self._body) :] if full.startswith(self._body) else ""
