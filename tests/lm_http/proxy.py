"""A loopback HTTP proxy in front of a real server that hides endpoints or cuts streams on purpose.

It plays the servers flare must cope with, on top of real answers: one without ``/props`` (vLLM,
OpenAI and llama-cpp-python's server report no chat template), and one that ends a completion
stream early (llama-cpp-python's server does when another request arrives). Everything else is
passed through unchanged, streamed events as they come.

Example::

    with Proxy(server_url, hide=("/props",)) as proxy:
        OpenAIHTTPModel(proxy.url).chat_template  # None: the proxy answers 404
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

import httpx

__all__ = ["Proxy"]

PASSED_HEADERS = ("content-type", "authorization", "accept")


class Proxy(ThreadingHTTPServer):
    """Forwards 127.0.0.1 requests to ``upstream`` (a ``/v1`` base URL); ``url`` is its own.

    ``hide`` are paths answered with 404 instead. The first ``cuts`` event streams are closed
    after ``cut_after`` events with no finish and no ``[DONE]``, as a dropped stream ends;
    ``streams`` counts the event streams begun, ``cut`` those cut.
    """

    daemon_threads = True

    def __init__(self, upstream: str, *, hide: Sequence[str] = (), cuts: int = 0, cut_after: int = 3) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        parts = urlsplit(upstream)
        self.upstream = f"{parts.scheme}://{parts.netloc}"
        self.hide, self.cuts, self.cut_after = tuple(hide), cuts, cut_after
        self.streams = self.cut = 0
        self.client = httpx.Client(timeout=600)
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self.serve_forever, name="proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def begin_stream(self) -> bool:
        """Count a new event stream; whether it is to be cut."""
        with self._lock:
            self.streams += 1
            cut = self.cut < self.cuts
            self.cut += cut
            return cut

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.shutdown()
        self.server_close()
        self.client.close()


class _Handler(BaseHTTPRequestHandler):
    server: Proxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._forward()

    def do_POST(self) -> None:
        self._forward()

    def _forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if urlsplit(self.path).path.removeprefix("/v1") in self.server.hide:
            self._send(404, "application/json", b'{"error": {"message": "not found", "code": 404}}')
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() in PASSED_HEADERS}
        request = self.server.client.build_request(self.command, self.server.upstream + self.path,
                                                   headers=headers, content=body)  # fmt: skip
        answer = self.server.client.send(request, stream=True)
        try:
            self._relay(answer)
        finally:
            answer.close()  # for a cut stream: drops the upstream connection too

    def _relay(self, answer: httpx.Response) -> None:
        kind = answer.headers.get("content-type", "")
        if not kind.startswith("text/event-stream"):
            self._send(answer.status_code, kind, answer.read())
            return
        cut = self.server.begin_stream()
        self.send_response(answer.status_code)
        self.send_header("Content-Type", kind)
        self.send_header("Connection", "close")  # the body ends when the connection does
        self.end_headers()
        self.close_connection = True
        events = 0
        try:
            for line in answer.iter_lines():
                if cut and events == self.server.cut_after:
                    break
                self.wfile.write(line.encode() + b"\n")
                if not line:
                    events += 1
                    self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client closed the stream early (stop_when held): drop the upstream one too

    def _send(self, status: int, kind: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind or "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
