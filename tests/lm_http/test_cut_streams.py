"""A completion stream that stops before its finish reason is an error, never a sentence.

llama.cpp's Python server ends a stream early when another request arrives; the backend used to
commit whatever it had ("G ret he t"). Now a cut stream is sent again once, then fails with a
ModelError. Checked against a real HTTP server on 127.0.0.1 that cuts streams on purpose, and
against real llama.cpp answers (llama-server from xllamacpp) through a loopback proxy that cuts
them (tests/loopback_proxy.py): llama-server itself queues a second request instead of ending the first.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from flare.errors import ModelError
from flare.lm.llama import LlamaCppModel
from flare.lm.openai_http import OpenAIHTTPModel
from tests.loopback_proxy import Proxy

TOKENS = [" Paris", " is", " the", " capital", "."]


def _chunk(text: str, finish: str | None) -> bytes:
    lp = {"tokens": [text], "token_logprobs": [-0.1], "text_offset": [0]} if text else None
    event = {"choices": [{"text": text, "logprobs": lp, "finish_reason": finish}]}
    return b"data: " + json.dumps(event).encode() + b"\n\n"


class CuttingServer(ThreadingHTTPServer):
    """An OpenAI-style completions endpoint whose first ``cuts`` streams stop after two tokens.

    ``mode`` is how a stream is cut: ``eof`` (the body ends cleanly, no finish reason, no
    [DONE]) or ``reset`` (chunked encoding broken off mid-body).
    """

    def __init__(self, cuts: int, mode: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.cuts, self.mode, self.streams = cuts, mode, 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: CuttingServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not self.path.endswith("/completions") or not body.get("stream"):
            self.send_error(404)
            return
        self.server.streams += 1
        cut = self.server.streams <= self.server.cuts
        chunked = self.server.mode == "reset"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding" if chunked else "Connection", "chunked" if chunked else "close")
        self.end_headers()
        events = [_chunk(t, None) for t in TOKENS[: 2 if cut else len(TOKENS)]]
        if not cut:
            events += [_chunk("", "stop"), b"data: [DONE]\n\n"]
        for event in events:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event) if chunked else event)
        if chunked and not cut:
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True  # a cut stream simply stops here


@pytest.fixture(params=["eof", "reset"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _serve(cuts: int, mode: str) -> Iterator[CuttingServer]:
    server = CuttingServer(cuts, mode)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _complete(server: CuttingServer) -> str:
    with OpenAIHTTPModel(server.url, "m", logprobs=True, backoff=0.0, timeout=30) as lm:
        return lm.complete("Q: capital of France?\nA:", max_tokens=16, stop_when=lambda text: False).text


def test_one_cut_stream_is_sent_again(mode: str) -> None:
    for server in _serve(1, mode):
        assert _complete(server) == "".join(TOKENS)
        assert server.streams == 2


def test_a_stream_cut_twice_fails_the_answer(mode: str) -> None:
    for server in _serve(2, mode):
        with pytest.raises(ModelError, match="cut off twice") as err:
            _complete(server)
        assert "one request at a time" in err.value.hint
        assert server.streams == 2


PROMPT = "Question: Who wrote the novel War and Peace?\nAnswer:"


def _streaming(url: str) -> OpenAIHTTPModel:
    return OpenAIHTTPModel(url, stream=True, timeout=300, backoff=0.0)


@pytest.mark.model
def test_a_real_stream_cut_once_gives_the_whole_answer(server_url: str, local_lm: LlamaCppModel) -> None:
    with Proxy(server_url.removesuffix("/v1"), cuts=1, cut_after=3) as proxy, _streaming(proxy.url) as lm:
        remote = lm.complete(PROMPT, max_tokens=24, stop_when=lambda text: False)
    local = local_lm.complete(PROMPT, max_tokens=24)
    assert (remote.text, remote.finish_reason) == (local.text, local.finish_reason)
    assert [t.text for t in remote.tokens] == [t.text for t in local.tokens]
    assert (proxy.streams, proxy.cut) == (2, 1)


@pytest.mark.model
def test_a_real_stream_cut_twice_fails_and_the_server_goes_on(server_url: str, local_lm: LlamaCppModel) -> None:
    cut = pytest.raises(ModelError, match="cut off twice")
    with Proxy(server_url.removesuffix("/v1"), cuts=2, cut_after=3) as proxy, _streaming(proxy.url) as lm, cut:
        lm.complete(PROMPT, max_tokens=24, stop_when=lambda text: False)
    assert (proxy.streams, proxy.cut) == (2, 2)
    # the dropped streams freed the server's one slot: the next answer is whole
    with _streaming(server_url) as lm:
        after = lm.complete(PROMPT, max_tokens=24, stop_when=lambda text: False)
    assert after.text == local_lm.complete(PROMPT, max_tokens=24).text
