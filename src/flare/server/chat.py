"""``POST /v1/chat/completions``: FLARE behind the OpenAI chat API, so chat clients work as is.

The question is the last user message; earlier turns and system messages are not used (FLARE
answers one question from the index). ``max_tokens`` / ``max_completion_tokens`` lower the
output budget; sampling knobs (``temperature``, ``top_p``, …) are accepted and ignored because
decoding is greedy. flare extensions travel in the body (``extra_body`` in the OpenAI SDK):
``filters`` and every setting a request may choose (``max_seconds``, ``theta``, ``method`` …, see
:mod:`flare.server.request_settings`). The reply's content is the
rendered answer with ``[n]`` markers and its source list; ``flare`` holds the structured answer.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from flare.config import Settings
from flare.engine.events import Finished, Rewriting, Searching, SentenceAccepted
from flare.engine.loop import MAX_QUESTION_CHARS
from flare.server import sse
from flare.server.answering import Queued, answer
from flare.server.common import MAX_FILTERS, STRICT, FilterExpr, authenticate, error_for, parse
from flare.server.errors import ApiError
from flare.server.request_settings import request_values, with_setting_fields
from flare.server.runner import Failure, Item, Service
from flare.types import Answer


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow", **STRICT)

    role: str
    content: str | list[dict[str, Any]] | None = None


class ChatBody(BaseModel):
    """The OpenAI chat request, plus flare's filters (settings: see :data:`ChatRequest`)."""

    model_config = ConfigDict(extra="allow", **STRICT)  # clients send many knobs; unknown ones are ignored

    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    n: int | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    filters: list[FilterExpr] = Field(default_factory=list, max_length=MAX_FILTERS)


ChatRequest = with_setting_fields(ChatBody, "ChatRequest")
"""The chat body with flare's request-settable settings as optional extensions."""


async def chat_completions(request: Request) -> Response:
    principal = authenticate(request)
    body = await parse(request, ChatRequest)
    if body.n not in (None, 1):
        raise ApiError(400, "invalid_request_error", "n must be 1: answers are deterministic")
    question = await anyio.to_thread.run_sync(_question, body)
    service: Service = request.app.state.service
    given = request_values(body)
    asked = (body.max_tokens, body.max_completion_tokens, given.get("max_output_tokens"))
    out_tokens = min((t for t in asked if t is not None), default=None)
    if out_tokens is not None:
        given["max_output_tokens"] = out_tokens
    meta = {"id": f"chatcmpl-{uuid.uuid4().hex}", "created": int(time.time()), "model": service.engine.lm.name}

    def render(done: Answer, settings: Settings) -> Response:
        message = {"role": "assistant", "content": done.render()}
        choice = {"index": 0, "message": message, "finish_reason": finish_reason(done), "logprobs": None}
        return JSONResponse({**meta, "object": "chat.completion", "choices": [choice], "flare": done.to_dict()})

    return await answer(request, principal, question, body.filters, given, stream=body.stream,
                        encode=lambda items: _chunks(items, meta, request), render=render)  # fmt: skip


def finish_reason(answer: Answer) -> str:
    """OpenAI's ``length`` when a budget ended the answer, else ``stop``."""
    return "length" if answer.stop_reason.startswith("max_") else "stop"


async def _chunks(
    events: AsyncIterator[Item | Queued | None], meta: dict[str, Any], request: Request
) -> AsyncIterator[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return sse.message(None, {**meta, "object": "chat.completion.chunk", "choices": [choice], **extra})

    text = sse.Delta()
    yield chunk({"role": "assistant", "content": ""})
    async for item in events:
        if item is None:
            yield sse.comment("keep-alive")
        elif isinstance(item, Queued):
            yield sse.comment(f"queued position={item.position} queue_depth={item.depth}")
        elif isinstance(item, Failure):
            yield sse.message(None, error_for(item.error, request).body())
            return
        elif isinstance(item, Searching | Rewriting):
            yield sse.comment(f"{item.type} step={item.step}")
        elif isinstance(item, SentenceAccepted):
            yield chunk({"content": text.add(item.sentence)})
        elif isinstance(item, Finished):
            rest = text.finish(item.answer)
            if rest:
                yield chunk({"content": rest})
            yield chunk({}, finish_reason(item.answer), flare=item.answer.to_dict())
            yield sse.message(None, "[DONE]")
            return


def _question(body: ChatBody) -> str:
    for message in reversed(body.messages):
        if message.role != "user":
            continue
        content = message.content
        if isinstance(content, list):
            content = " ".join(str(part.get("text", "")) for part in content if part.get("type") == "text")
        if content and content.strip():
            if len(content) > MAX_QUESTION_CHARS:
                raise ApiError(400, "invalid_request_error",
                               f"the question is longer than {MAX_QUESTION_CHARS} characters")  # fmt: skip
            return content
    raise ApiError(400, "invalid_request_error", "no user message with text to answer")


ROUTES = [Route("/v1/chat/completions", chat_completions, methods=["POST"])]
