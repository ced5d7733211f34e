"""A fake OpenAI-compatible completion server with a fixed delay per token, for load tests.

It isolates flare's own scaling from a model's: every request takes ``token_delay`` seconds per
generated token and they all run at once (asyncio), like a server with unlimited parallel slots.
Replies are deterministic functions of the prompt, shaped for the FLARE loop: without documents
it drafts ``" The answer to <question> is unknown."`` with ``unknown`` at p=0.05 (so FLARE
retrieves), with documents it restates the first sentence of document ``[n]`` (n = sentences
answered so far + 1) at p=0.95, each followed by the start of another; after :data:`SENTENCES`
sentences it ends the answer.

It speaks ``POST /v1/completions`` (streamed or not, with ``logprobs``: ``tokens`` and
``token_logprobs``), ``POST /v1/chat/completions`` (the messages rendered as ChatML, a trailing
assistant message continued unless ``prefill=False``; ``logprobs.content`` with each token's
bytes), ``GET /v1/models``, and ``GET /stats`` with its counters: ``requests``, ``tokens``
generated, ``in_flight`` and ``peak_in_flight`` (the most requests served at once),
``disconnects`` (streams the client closed early). With ``tokenizer=True`` it also answers
llama.cpp's ``POST /tokenize`` (one id per word-ish token) and honours a ``logit_bias`` of 50 or
more by starting with that token. ``logprobs="none"`` imitates a server that never returns
logprobs, ``"reject"`` one that answers a request for them with HTTP 400. Needs the ``server``
extra.

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
from typing import Any, Literal

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from flare.lm.openai_chat import CONTINUE_INSTRUCTION, DONE
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


LogprobsMode = Literal["yes", "none", "reject"]


def chat_prompt(messages: list[dict[str, Any]], *, prefill: bool = True) -> tuple[str, bool]:
    """The ChatML text a chat server would build from ``messages`` (what :func:`reply` reads),
    and whether the messages end with flare's instruction to continue.

    With ``prefill`` a trailing assistant message is continued, as llama.cpp's server does.
    flare's instruction to continue (``CONTINUE_INSTRUCTION``) is obeyed the way a chat model
    would: the assistant message before it is continued.
    """
    turns = [(str(m.get("role")), str(m.get("content") or "")) for m in messages]
    instructed = len(turns) > 1 and turns[-1] == ("user", CONTINUE_INSTRUCTION) and turns[-2][0] == "assistant"
    if instructed:
        turns, prefill = turns[:-1], True
    open_turn = ""
    if prefill and turns and turns[-1][0] == "assistant":
        open_turn = turns.pop()[1]
    closed = "".join(f"<|im_start|>{role}\n{content}<|im_end|>\n" for role, content in turns)
    return f"{closed}<|im_start|>assistant\n{open_turn}", instructed


def create_fake_app(
    token_delay: float = 0.02,
    model: str = "fake",
    *,
    logprobs: LogprobsMode = "yes",
    prefill: bool = True,
    tokenizer: bool = False,
) -> Starlette:
    """The ASGI app of the fake server (see the module docstring).

    ``logprobs``: ``yes`` returns them when asked, ``none`` never sends any (a hosted chat model
    without them), ``reject`` answers a request that asks for them with HTTP 400. ``prefill``:
    whether ``/v1/chat/completions`` continues a trailing assistant message (llama.cpp does) or
    starts a new turn after it (hosted APIs), following flare's instruction to continue.
    ``tokenizer`` adds ``/tokenize`` (and with it token counts and logit biases).
    """
    if token_delay < 0:
        raise ValueError("token_delay must be ≥ 0")
    stats = _Stats()
    vocab: dict[str, int] = {}  # token text → id, grown by /tokenize
    by_id: dict[int, str] = {}

    def ids_of(text: str) -> list[int]:
        out = []
        for token in ScriptedLM.split(text):
            if token not in vocab:
                vocab[token] = len(vocab)
                by_id[vocab[token]] = token
            out.append(vocab[token])
        return out

    def generate(prompt: str, body: dict[str, Any]) -> tuple[list[tuple[str, float]], str]:
        max_tokens = int(body.get("max_tokens") or 16)
        stops = [s for s in body.get("stop") or [] if s]
        tokens = reply(prompt)
        pushed = [(v, by_id[int(k)]) for k, v in (body.get("logit_bias") or {}).items()
                  if int(k) in by_id and float(v) >= 50]  # fmt: skip
        if pushed:  # a strong bias makes the biased token come first, as it would in a real model
            tokens = [(max(pushed)[1], 0.99), *tokens]
        tokens = _cut(tokens, max_tokens, stops)
        return tokens, "length" if len(tokens) == max_tokens and tokens else "stop"

    def refused(body: dict[str, Any]) -> Response | None:
        if logprobs == "reject" and body.get("logprobs"):
            return JSONResponse({"error": {"message": "logprobs is not supported"}}, status_code=400)
        return None

    async def completions(request: Request) -> Response:
        body = json.loads(await request.body())
        if (no := refused(body)) is not None:
            return no
        prompt = str(body.get("prompt", ""))
        tokens, finish = generate(prompt, body)
        want = bool(body.get("logprobs")) and logprobs == "yes"
        stats.requests += 1
        if body.get("stream"):
            return StreamingResponse(_stream(tokens, finish, want, chat=False), media_type="text/event-stream")
        await _wait(len(tokens))
        text = "".join(t for t, _ in tokens)
        offsets = [sum(len(t) for t, _ in tokens[:i]) for i in range(len(tokens))]
        lp = {"tokens": [t for t, _ in tokens], "token_logprobs": [math.log(p) for _, p in tokens],
              "text_offset": offsets}  # fmt: skip
        choice = {"index": 0, "text": text, "logprobs": lp if want else None, "finish_reason": finish}
        usage = {"prompt_tokens": len(ScriptedLM.split(prompt)), "completion_tokens": len(tokens)}
        return JSONResponse({"object": "text_completion", "model": model, "choices": [choice], "usage": usage})

    async def chat(request: Request) -> Response:
        body = json.loads(await request.body())
        if (no := refused(body)) is not None:
            return no
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return JSONResponse({"error": {"message": "messages must be a non-empty list"}}, status_code=400)
        keep_open = prefill or bool(body.get("continue_final_message")) or bool(messages[-1].get("prefix"))
        prompt, instructed = chat_prompt(messages, prefill=keep_open)
        tokens, finish = generate(prompt, body)
        if instructed and not tokens:
            tokens = [(DONE, 0.9)]  # nothing to add: the instructed reply
        fresh = messages[-1].get("role") == "user"  # a new turn: a chat model does not start with a space
        if fresh and tokens and tokens[0][0].startswith(" "):
            tokens[0] = (tokens[0][0][1:], tokens[0][1])
            tokens = [t for t in tokens if t[0]]
        want = bool(body.get("logprobs")) and logprobs == "yes"
        stats.requests += 1
        if body.get("stream"):
            return StreamingResponse(_stream(tokens, finish, want, chat=True), media_type="text/event-stream")
        await _wait(len(tokens))
        text = "".join(t for t, _ in tokens)
        choice = {"index": 0, "message": {"role": "assistant", "content": text},
                  "logprobs": {"content": [_entry(t, p) for t, p in tokens]} if want else None,
                  "finish_reason": finish}  # fmt: skip
        usage = {"prompt_tokens": len(ScriptedLM.split(prompt)), "completion_tokens": len(tokens)}
        return JSONResponse({"object": "chat.completion", "model": model, "choices": [choice], "usage": usage})

    async def _wait(n: int) -> None:
        stats.in_flight += 1
        stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)
        try:
            await asyncio.sleep(token_delay * n)
        finally:
            stats.in_flight -= 1
        stats.tokens += n

    async def _stream(tokens: list[tuple[str, float]], finish: str, want: bool, *, chat: bool) -> AsyncIterator[bytes]:
        stats.in_flight += 1
        stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)
        sent = 0
        try:
            for token, p in tokens:
                await asyncio.sleep(token_delay)
                stats.tokens += 1
                sent += 1
                yield _event({"choices": [_chunk(token, p, None, want, chat)]})
            yield _event({"choices": [_chunk("", 1.0, finish, False, chat)]})
            yield b"data: [DONE]\n\n"
        except asyncio.CancelledError:
            if sent < len(tokens):
                stats.disconnects += 1
            raise
        finally:
            stats.in_flight -= 1

    async def tokenize(request: Request) -> Response:
        body = json.loads(await request.body())
        return JSONResponse({"tokens": ids_of(str(body.get("content", "")))})

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": model, "object": "model"}]})

    async def get_stats(request: Request) -> Response:
        return JSONResponse(stats.as_dict())

    routes = [
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/stats", get_stats, methods=["GET"]),
    ]
    if tokenizer:
        routes.append(Route("/tokenize", tokenize, methods=["POST"]))
    return Starlette(routes=routes)


def _entry(token: str, p: float) -> dict[str, Any]:
    """One token of the chat logprobs format (OpenAI's and llama.cpp's)."""
    return {"token": token, "logprob": math.log(p), "bytes": list(token.encode()), "top_logprobs": []}


def _chunk(token: str, p: float, finish: str | None, want: bool, chat: bool) -> dict[str, Any]:
    if not chat:
        lp = {"tokens": [token], "token_logprobs": [math.log(p)]} if want else None
        return {"index": 0, "text": token, "logprobs": lp, "finish_reason": finish}
    delta = {"content": token} if token else {}
    lp = {"content": [_entry(token, p)]} if want else None
    return {"index": 0, "delta": delta, "logprobs": lp, "finish_reason": finish}


def _cut(tokens: list[tuple[str, float]], max_tokens: int, stops: list[str]) -> list[tuple[str, float]]:
    """The first ``max_tokens`` tokens, ended before the first stop sequence (inside a token too)."""
    out: list[tuple[str, float]] = []
    text = ""
    for token, p in tokens[:max_tokens]:
        hits = [(text + token).find(s) for s in stops if s in text + token]
        if hits:
            keep = (text + token)[: min(hits)][len(text) :]
            if keep:
                out.append((keep, p))
            break
        out.append((token, p))
        text += token
    return out


def _event(data: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(data)}\n\n".encode()


class FakeOpenAIServer(ThreadedServer):
    """Runs :func:`create_fake_app` with uvicorn on 127.0.0.1 in a thread; ``url`` ends in ``/v1``."""

    def __init__(
        self,
        token_delay: float = 0.02,
        *,
        port: int = 0,
        model: str = "fake",
        logprobs: LogprobsMode = "yes",
        prefill: bool = True,
        tokenizer: bool = False,
    ) -> None:
        app = create_fake_app(token_delay, model, logprobs=logprobs, prefill=prefill, tokenizer=tokenizer)
        super().__init__(app, port=port, lifespan="off", name="fake OpenAI server")

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
