"""A loopback proxy in front of a real server that makes it look like another kind of server.

It adds the upstream's API key (clients need none), can strip every ``logprobs`` field from the
answers, streamed or not (a chat API that returns none), and can hide paths such as ``/props``
and ``/tokenize`` (a hosted API: no llama.cpp extras, so the chat backend is instructed).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Collection
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from flare.testing.threaded import ThreadedServer


def _strip(data: Any) -> Any:
    if isinstance(data, dict):
        for choice in data.get("choices") or []:
            if isinstance(choice, dict):
                choice["logprobs"] = None
    return data


class Proxy(ThreadedServer):
    """Forwards to ``upstream`` (a server root, without ``/v1``); ``url`` ends in ``/v1``."""

    def __init__(self, upstream: str, key: str, *, strip_logprobs: bool = False, hide: Collection[str] = ()) -> None:
        self.upstream, self.key, self.strip, self.hide = upstream.rstrip("/"), key, strip_logprobs, set(hide)
        self.requests: list[str] = []
        super().__init__(Starlette(routes=[Route("/{path:path}", self._forward, methods=["GET", "POST"])]),
                         lifespan="off", name="proxy")  # fmt: skip

    @property
    def url(self) -> str:
        return f"{self.root}/v1"

    async def _forward(self, request: Request) -> Response:
        path = request.url.path
        self.requests.append(path)
        if path in self.hide:
            return JSONResponse({"error": {"message": "not found"}}, status_code=404)
        client = httpx.AsyncClient(timeout=600)
        upstream = client.build_request(
            request.method, self.upstream + path, content=await request.body(),
            headers={"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"},
        )  # fmt: skip
        response = await client.send(upstream, stream=True)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return StreamingResponse(self._events(client, response), media_type="text/event-stream")
        body = await response.aread()
        await response.aclose()
        await client.aclose()
        if self.strip and response.status_code == 200:
            body = json.dumps(_strip(json.loads(body))).encode()
        return Response(body, status_code=response.status_code, media_type="application/json")

    async def _events(self, client: httpx.AsyncClient, response: httpx.Response) -> AsyncIterator[bytes]:
        try:
            async for line in response.aiter_lines():
                if self.strip and line.startswith("data:") and line[5:].strip() != "[DONE]":
                    line = "data: " + json.dumps(_strip(json.loads(line[5:])))
                yield (line + "\n").encode()
        finally:  # the client went away (a sentence ended): the upstream stream is closed too
            await response.aclose()
            await client.aclose()
