"""A fake OpenAI-compatible completion server with a fixed delay per token, for load tests.

It isolates flare's own scaling from a model's: every request takes ``token_delay`` seconds per
generated token and they all run at once (asyncio), like a server with unlimited parallel slots.
Replies are deterministic functions of the prompt, shaped for the FLARE loop: without documents
it drafts ``" The answer to <question> is unknown."`` with ``unknown`` at p=0.05 (so FLARE
retrieves), with documents it restates the first sentence of document ``[n]`` (n = sentences
answered so far + 1) at p=0.95, each followed by the start of another; after :data:`SENTENCES`
sentences it ends the answer.

It speaks ``POST /v1/completions`` (streamed or not, with ``logprobs``: ``tokens`` and
``token_logprobs``), ``GET /v1/models``, and ``GET /stats`` with its counters: ``requests``,
``tokens`` generated, ``in_flight`` and ``peak_in_flight`` (the most requests served at once),
``disconnects`` (streams the client closed early). Needs the ``server`` extra.

Example::

    with FakeOpenAIServer(token_delay=0.02) as fake:
        lm = OpenAIHTTPModel(fake.url, "fake", max_parallel=8)
        print(lm.complete("Question: Who?\\nAnswer:", max_tokens=16).text)
        print(fake.stats()["peak_in_flight"])

Run ``python -m flare.testing.fake_openai --port 8089 --token-delay 0.02`` for a standalone one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from flare.testing.scripted import ScriptedLM
from flare.testing.threaded import ThreadedServer

__all__ = ["SENTENCES", "FakeOpenAIServer", "create_fake_app", "reply"]

SENTENCES = 2  # sentences per answer before the fake model ends it
_DOC = re.compile(r"^\[(\d+)\] (?:[^:\n]*: )?(.*)$", re.MULTILINE)
_SENTENCE_END = re.compile(r"[.!?。！？]")
_GOES_ON = [(" And", 0.9), (" so", 0.9)]  # the text goes on: a sentence splitter sees the end


def reply(prompt: str) -> list[tuple[str, float]]:
    """The fake model's continuation of ``prompt``: ``(token, probability)`` pairs."""
    head, sep, live = prompt.rpartition("Question:")
    if not sep:
        return [(t, 0.9) for t in ScriptedLM.split(" I do not know.")]
    turn = "Answer:" if "Answer:" in live else "<|im_start|>assistant\n"  # plain or ChatML layout
    question, _, answer = live.partition(turn)
    question = question.split("<|im_end|>")[0].strip().rstrip("?？")
    done = len(_SENTENCE_END.findall(answer))
    if done >= SENTENCES:
        return []
    docs = {int(n): text for n, text in _DOC.findall(head.rsplit("Answer:", 1)[-1])}
    if docs:
        text = docs.get(done + 1) or docs[min(docs)]
        first = _SENTENCE_END.split(text, maxsplit=1)[0].strip() or "It is not known"
        return [(t, 0.95) for t in ScriptedLM.split(f" {first}.")] + _GOES_ON
    words = ScriptedLM.split(f" The answer to {question or 'this'} is")
    return [(t, 0.9) for t in words] + [(" unknown", 0.05), (".", 0.9)] + _GOES_ON


class _Stats:
    def __init__(self) -> None:
        self.requests = self.tokens = self.in_flight = self.peak_in_flight = self.disconnects = 0

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


def create_fake_app(token_delay: float = 0.02, model: str = "fake") -> Starlette:
    """The ASGI app of the fake server (see the module docstring)."""
    if token_delay < 0:
        raise ValueError("token_delay must be ≥ 0")
    stats = _Stats()

    async def completions(request: Request) -> Response:
        body = json.loads(await request.body())
        prompt, max_tokens = str(body.get("prompt", "")), int(body.get("max_tokens") or 16)
        stops = [s for s in body.get("stop") or [] if s]
        tokens = _cut(reply(prompt), max_tokens, stops)
        finish = "length" if len(tokens) == max_tokens and tokens else "stop"
        stats.requests += 1
        if body.get("stream"):
            return StreamingResponse(_stream(tokens, finish), media_type="text/event-stream")
        stats.in_flight += 1
        stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)
        try:
            await asyncio.sleep(token_delay * len(tokens))
        finally:
            stats.in_flight -= 1
        stats.tokens += len(tokens)
        text = "".join(t for t, _ in tokens)
        offsets = [sum(len(t) for t, _ in tokens[:i]) for i in range(len(tokens))]
        logprobs = {"tokens": [t for t, _ in tokens], "token_logprobs": [math.log(p) for _, p in tokens],
                    "text_offset": offsets}  # fmt: skip
        choice = {"index": 0, "text": text, "logprobs": logprobs, "finish_reason": finish}
        usage = {"prompt_tokens": len(ScriptedLM.split(prompt)), "completion_tokens": len(tokens)}
        return JSONResponse({"object": "text_completion", "model": model, "choices": [choice], "usage": usage})

    async def _stream(tokens: list[tuple[str, float]], finish: str) -> AsyncIterator[bytes]:
        stats.in_flight += 1
        stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)
        sent = 0
        try:
            for token, p in tokens:
                await asyncio.sleep(token_delay)
                stats.tokens += 1
                sent += 1
                lp = {"tokens": [token], "token_logprobs": [math.log(p)]}
                yield _event({"choices": [{"index": 0, "text": token, "logprobs": lp, "finish_reason": None}]})
            yield _event({"choices": [{"index": 0, "text": "", "logprobs": None, "finish_reason": finish}]})
            yield b"data: [DONE]\n\n"
        except asyncio.CancelledError:
            if sent < len(tokens):
                stats.disconnects += 1
            raise
        finally:
            stats.in_flight -= 1

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": model, "object": "model"}]})

    async def get_stats(request: Request) -> Response:
        return JSONResponse(stats.as_dict())

    return Starlette(routes=[
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/stats", get_stats, methods=["GET"]),
    ])  # fmt: skip


def _cut(tokens: list[tuple[str, float]], max_tokens: int, stops: list[str]) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    text = ""
    for token, p in tokens[:max_tokens]:
        if any(s in text + token for s in stops):
            break
        out.append((token, p))
        text += token
    return out


def _event(data: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(data)}\n\n".encode()


class FakeOpenAIServer(ThreadedServer):
    """Runs :func:`create_fake_app` with uvicorn on 127.0.0.1 in a thread; ``url`` ends in ``/v1``."""

    def __init__(self, token_delay: float = 0.02, *, port: int = 0, model: str = "fake") -> None:
        super().__init__(create_fake_app(token_delay, model), port=port, lifespan="off", name="fake OpenAI server")

    @property
    def url(self) -> str:
        return f"{self.root}/v1"

    def stats(self) -> dict[str, int]:
        """The server's counters (see the module docstring)."""
        data: dict[str, int] = httpx.get(f"{self.root}/stats", timeout=10).json()
        return data


def main() -> None:
    parser = argparse.ArgumentParser(description="A fake OpenAI-compatible server with a fixed delay per token.")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--token-delay", type=float, default=0.02, help="seconds per generated token")
    args = parser.parse_args()
    uvicorn.run(create_fake_app(args.token_delay), host="127.0.0.1", port=args.port, log_level="warning",
                access_log=False)  # fmt: skip


if __name__ == "__main__":
    main()
