"""A served model gets the right prompt layout: the chat template from ``/props``, else ``layout``.

llama.cpp's own server reports the model's chat template at ``GET /props``; llama-cpp-python's
server, vLLM and OpenAI do not, and there the ``layout`` setting (``--layout chatml``) decides.
Both are checked on real llama.cpp answers: llama-server from xllamacpp, and the same server
behind a loopback proxy that answers ``/props`` with 404.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from flare.config import Settings
from flare.engine.loop import Flare
from flare.lm.llama import default_model_path
from flare.lm.openai_http import OpenAIHTTPModel
from flare.testing.memory import MemoryRetriever
from tests.lm_http.llama_server import llama_server
from tests.loopback_proxy import Proxy

URL = "http://test.invalid/v1"
CHATML = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"


def _model(handler: httpx.MockTransport, **options: object) -> OpenAIHTTPModel:
    return OpenAIHTTPModel(URL, "m", transport=handler, **options)  # type: ignore[arg-type]


def test_the_template_is_read_once_from_props() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(200, json={"chat_template": CHATML, "total_slots": 1})

    lm = _model(httpx.MockTransport(handler))
    assert seen == []  # construction sends nothing
    assert lm.chat_template == CHATML and lm.chat_template == CHATML
    assert seen == ["/props"]
    assert Flare(lm, MemoryRetriever([])).template_for(Settings()).name == "chatml"


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(404, text="not found"),
        httpx.Response(200, text="<html>not json</html>"),
        httpx.Response(200, json=["a list"]),
        httpx.Response(200, json={"chat_template": ""}),
        httpx.Response(200, json={"chat_template": 7}),
    ],
)
def test_a_server_that_cannot_say_gives_none_and_the_plain_layout(answer: httpx.Response) -> None:
    lm = _model(httpx.MockTransport(lambda request: answer))
    assert lm.chat_template is None
    engine = Flare(lm, MemoryRetriever([]))
    assert engine.template_for(Settings()).name == "plain"
    assert engine.template_for(Settings(layout="chatml")).name == "chatml"


def test_an_unreachable_server_or_a_given_template_sends_no_error() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    assert _model(httpx.MockTransport(refuse)).chat_template is None
    given = _model(httpx.MockTransport(refuse), chat_template=CHATML)
    assert given.chat_template == CHATML


@pytest.fixture(scope="module")
def no_props_url(server_url: str) -> Iterator[str]:
    """The real server behind a proxy without ``/props``, as a server that reports no template."""
    with Proxy(server_url.removesuffix("/v1"), hide=("/props",)) as proxy:
        yield proxy.url


@pytest.mark.model
def test_a_server_without_props_reports_no_template_and_layout_decides(no_props_url: str, tmp_path: Path) -> None:
    with OpenAIHTTPModel(no_props_url, timeout=300) as lm:
        assert lm.chat_template is None
        assert Flare(lm, MemoryRetriever([])).template_for(Settings()).name == "plain"
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "title": "Alpha", "text": "Alpha was founded in 1901 by Ada Berg."}))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}

    def flare(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "flare", *args], capture_output=True, text=True, cwd=tmp_path,
                              env=env, timeout=600)  # fmt: skip

    assert flare("index", str(corpus), "--index", "idx", "--quiet").returncode == 0
    out = flare("ask", "Who founded Alpha?", "--index", "idx", "--model", f"openai:{no_props_url}#smollm2",
                "--layout", "chatml", "--max-sentences", "1", "--json", "--trace", "t.jsonl")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["answer"]
    assert json.loads((tmp_path / "t.jsonl").read_text())["settings"]["layout"] == "chatml"


@pytest.fixture(scope="module")
def keyed_server() -> Iterator[tuple[str, str]]:
    """llama.cpp's own server (from the xllamacpp wheel) serving SmolLM2 with a key: (URL, key)."""
    key = "sk-" + secrets.token_urlsafe(16)
    with llama_server(default_model_path(), api_key=key) as url:
        yield url, key


@pytest.mark.model
def test_llama_cpp_server_reports_chatml_and_the_engine_follows(keyed_server: tuple[str, str]) -> None:
    url, key = keyed_server
    with OpenAIHTTPModel(url, api_key="sk-wrong", timeout=300) as wrong:
        assert wrong.chat_template is None  # refused: the template is the server's, behind its key
    with OpenAIHTTPModel(url, api_key=key, timeout=300) as lm:
        assert lm.chat_template is not None and "<|im_start|>" in lm.chat_template
        engine = Flare(lm, MemoryRetriever([]))
        assert engine.template.name == "chatml"
        assert engine.template_for(Settings(layout="plain")).name == "plain"  # the setting still wins
