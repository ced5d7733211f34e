"""A loopback proxy in front of a real server that makes it look like another kind of server.

It can add the upstream's API key (clients need none), strip every ``logprobs`` field from the
answers, streamed or not (a chat API that returns none), hide paths such as ``/props`` and
``/tokenize`` (a hosted API, or llama-cpp-python's server and vLLM: no chat template reported),
and end the first ``cuts`` event streams after ``cut_after`` events with no finish reason and no
``[DONE]`` (llama-cpp-python's server drops a stream when another request arrives).

Example::

    with Proxy(server_root, hide=("/props",)) as proxy:
        OpenAIHTTPModel(proxy.url).chat_template  # None: the proxy answers 404
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
    """Forwards to ``upstream`` (a server root, without ``/v1``); ``url`` ends in ``/v1``.

    ``streams`` counts the event streams begun, ``cut`` those ended early.
    """

    def __init__(
        self,
        upstream: str,
        key: str | None = None,
        *,
        strip_logprobs: bool = False,
        hide: Collection[str] = (),
        cuts: int = 0,
        cut_after: int = 3,
    ) -> None:
        self.upstream, self.key, self.strip, self.hide = upstream.rstrip("/"), key, strip_logprobs, set(hide)
        self.cuts, self.cut_after, self.streams, self.cut = cuts, cut_after, 0, 0
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
        key = self.key or request.headers.get("authorization", "").removeprefix("Bearer ")
        headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {key}"} if key else {})
        upstream = client.build_request(request.method, self.upstream + path, content=await request.body(),
                                        headers=headers)  # fmt: skip
        response = await client.send(upstream, stream=True)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            self.streams += 1  # one event loop runs every request: no lock needed
            cut = self.cut < self.cuts
            self.cut += cut
            events = self._events(client, response, self.cut_after if cut else None)
            return StreamingResponse(events, media_type="text/event-stream")
        body = await response.aread()
        await response.aclose()
        await client.aclose()
        if self.strip and response.status_code == 200:
            body = json.dumps(_strip(json.loads(body))).encode()
        return Response(body, status_code=response.status_code, media_type="application/json")

    async def _events(
        self, client: httpx.AsyncClient, response: httpx.Response, cut_after: int | None
    ) -> AsyncIterator[bytes]:
        events = 0
        try:
            async for line in response.aiter_lines():
                if events == cut_after:
                    return  # the body ends here, before any finish reason
                if self.strip and line.startswith("data:") and line[5:].strip() != "[DONE]":
                    line = "data: " + json.dumps(_strip(json.loads(line[5:])))
                yield (line + "\n").encode()
                events += not line
        finally:  # the client went away (a sentence ended): the upstream stream is closed too
            await response.aclose()
            await client.aclose()
