"""A language model behind an OpenAI-compatible ``/v1/completions`` server that returns logprobs.

Works with llama.cpp's server (C++ ``llama-server`` and ``python -m llama_cpp.server``), vLLM and
gateways that pass ``logprobs`` through. Every request is greedy (``temperature=0``) and asks for
the log-probability of each generated token, so FLARE's confidence check reads the probabilities
of the very tokens the server produced (requirement M1, O4).

What the server sends back is normalised to the :class:`~flare.lm.base.LanguageModel` contract:

* **Whole characters.** A byte-level tokenizer may split one character (Chinese, emoji) over
  several tokens; servers then report empty or broken token strings. Pieces are rebuilt from
  ``bytes`` (llama.cpp's newer format), else from ``text_offset`` against the returned text, else
  from the token strings; the tokens of one character are merged and their log-probabilities
  summed, exactly as the in-process backend does.
* **stop / stop_when.** ``stop`` goes to the server. With ``stop_when`` (the engine's
  end-of-sentence stop) the completion is streamed (SSE) and the stream closed as soon as
  ``stop_when`` holds, so the server stops generating: measured a third cheaper per draft than
  one request for ``max_tokens`` cut afterwards (``benchmarks/bench_lm_http.py``). A stream that
  cannot carry the text (llama_cpp.server sends byte tokens as "") falls back to that one request,
  as does ``stream=False``.
* **logit_bias** is keyed by text; it is mapped to token ids through the server's tokenize
  endpoint (``/tokenize`` or ``/extras/tokenize``). Only the tokens that the key and the key
  after a space encode to as single tokens are biased, a narrower set than the in-process
  backend's "every token starting with the key".
* **Retries** with exponential backoff on connection errors, timeouts, 429 and 5xx. A stream
  that ends without a finish reason (the server dropped it mid-answer) is sent again once, then
  fails with a :class:`~flare.errors.ModelError`: a cut-off text is never taken as a sentence.
* **Concurrency.** One instance may be shared by threads: at most ``max_parallel`` calls are in
  flight at once (the server's parallel slots, e.g. ``llama-server --parallel N``; vLLM batches
  many more), the rest wait. ``flare serve`` runs that many answers' LM calls side by side.

Example::

    lm = OpenAIHTTPModel("http://127.0.0.1:8080/v1", model="smollm2")
    c = lm.complete("Question: What is the capital of France?\\nAnswer:", max_tokens=16)
    print(c.text, [round(t.prob, 2) for t in c.tokens])
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from typing import Any

import httpx

from flare.errors import ConfigError, ModelError
from flare.lm.base import ModelBase, StopWhen
from flare.lm.openai_logprobs import (
    SERVER_HINT,
    Piece,
    apply_stop_when,
    cap,
    completion,
    finish_reason,
    first_choice,
    merge_pieces,
    pieces_of,
    streamed_tokens,
)
from flare.types import Completion, FinishReason

__all__ = ["OpenAIHTTPModel", "from_spec"]

INSTALL_HINT = "pip install 'flare-rag[openai]'"
RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
# llama.cpp servers apply a 1.1 repetition penalty unless told otherwise; greedy decoding with a
# penalty no longer picks the most probable token, so the reported probabilities would not be the
# ones the choice was made from. vLLM and llama.cpp accept the field; gateways that reject unknown
# fields take ``extra={}``.
DEFAULT_EXTRA: Mapping[str, Any] = {"repeat_penalty": 1.0}
PROBE_TIMEOUT = 10.0  # reading /props is optional: a server slow to answer it is treated as silent


class OpenAIHTTPModel(ModelBase):
    """A :class:`~flare.lm.base.LanguageModel` over HTTP; construction sends no request.

    ``base_url`` ends in ``/v1``; ``model`` defaults to the first one ``/v1/models`` lists.
    ``api_key`` defaults to ``$FLARE_OPENAI_API_KEY`` (never ``$OPENAI_API_KEY``: a key meant for
    one provider must not be sent to whatever URL a spec names). ``logprobs=None`` probes the
    server on first use of :attr:`supports_logprobs`. ``chat_template`` is the served model's
    template text; left out, it is read once from the server's ``/props`` (llama.cpp's server
    reports it there; vLLM and OpenAI do not, so set ``Settings.layout`` / ``--layout`` for them).
    The engine reads it to choose ChatML prompts. ``extra`` is merged into every request body
    (default: ``repeat_penalty=1``).
    ``max_parallel`` bounds the calls in flight at once when threads share the instance.
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        stream: bool = True,
        logprobs: bool | None = None,
        extra: Mapping[str, Any] | None = None,
        name: str | None = None,
        chat_template: str | None = None,
        max_parallel: int = 8,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"not an http(s) URL: {base_url!r}", "e.g. http://127.0.0.1:8080/v1")
        if max_retries < 0 or backoff < 0 or timeout <= 0:
            raise ConfigError("max_retries and backoff must be ≥ 0, timeout > 0")
        if max_parallel < 1:
            raise ConfigError(f"max_parallel must be ≥ 1, got {max_parallel}", "e.g. the server's parallel slots")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = name or f"openai:{self.base_url}#{model or ''}"
        self.max_retries = max_retries
        self.backoff = backoff
        self.stream = stream
        self._chat_template: str | bool | None = False if chat_template is None else chat_template  # False: not read
        self.max_parallel = max_parallel
        self._slots = threading.BoundedSemaphore(max_parallel)
        self._probing = threading.RLock()  # lazy probes run once even when threads race
        self.extra = dict(DEFAULT_EXTRA if extra is None else extra)
        key = api_key if api_key is not None else os.environ.get("FLARE_OPENAI_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)
        self._logprobs = logprobs
        self._tokenizer: tuple[str, str] | bool | None = False  # False: not probed yet
        self._bias_ids: dict[str, list[int]] = {}
        self._base: list[int] | None = None
        self._bias_allowed = True

    # -- capabilities ------------------------------------------------------------------------

    @property
    def supports_logprobs(self) -> bool:
        """Whether the server returns token logprobs (probed once with a one-token request)."""
        with self._probing:
            if self._logprobs is None:
                self._logprobs = self._probe_logprobs()
            return self._logprobs

    @supports_logprobs.setter
    def supports_logprobs(self, value: bool) -> None:
        self._logprobs = value

    def _probe_logprobs(self) -> bool:
        body = self._post(self.endpoint, self._body("Hello", 1, (), True, None))
        return first_choice(body).get("logprobs") not in (None, {})

    @property
    def chat_template(self) -> str | None:
        """The served model's chat template: as given, else from ``/props`` (read once), else None."""
        if self._chat_template is False:
            self._chat_template = None
            try:
                response = self._client.get(self.base_url.removesuffix("/v1") + "/props", timeout=PROBE_TIMEOUT)
                props = response.json() if response.status_code == 200 else {}
            except (httpx.HTTPError, ValueError):
                props = {}  # a server that cannot say: the settings' layout decides
            template = props.get("chat_template") if isinstance(props, dict) else None
            if isinstance(template, str) and template:
                self._chat_template = template
        return self._chat_template if isinstance(self._chat_template, str) else None

    @property
    def supports_logit_bias(self) -> bool:
        """Whether text-keyed logit biases can be mapped to token ids (a tokenize endpoint)."""
        return self._bias_allowed and self._find_tokenizer() is not None

    @supports_logit_bias.setter
    def supports_logit_bias(self, value: bool) -> None:
        self._bias_allowed = value

    # -- LanguageModel -----------------------------------------------------------------------

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int,
        stop: Sequence[str] = (),
        stop_when: StopWhen | None = None,
        logit_bias: Mapping[str, float] | None = None,
    ) -> Completion:
        """Greedily continue ``prompt`` on the server (see :class:`~flare.lm.base.LanguageModel`)."""
        if max_tokens < 0:
            raise ConfigError(f"max_tokens must be ≥ 0, got {max_tokens}")
        start = time.perf_counter()
        if max_tokens == 0:  # servers read 0 as "no limit"
            return Completion("", (), "length", seconds=time.perf_counter() - start)
        with self._slots:
            return self._complete(prompt, max_tokens, stop, stop_when, logit_bias, start)

    def _complete(
        self,
        prompt: str,
        max_tokens: int,
        stop: Sequence[str],
        stop_when: StopWhen | None,
        logit_bias: Mapping[str, float] | None,
        start: float,
    ) -> Completion:
        bias = self._map_bias(logit_bias) if logit_bias else None
        want = self.supports_logprobs
        body = self._body(prompt, max_tokens, stop, want, bias)
        if self.stream and stop_when is not None:
            streamed = self._complete_streamed(body, stop_when)
            if streamed is not None:
                text, pieces, finish, generated = cap(*streamed[:3], max_tokens)
                # A closed stream sends no usage; llama.cpp's timings_per_token gives it early.
                usage = streamed[3] or {"prompt_tokens": self._count_prompt(prompt)}
                # Without logprobs the streamed chunks only count tokens: a completion has none.
                return completion(text, pieces if want else [], finish, usage, generated, start)
        choice, usage = self._complete_once(body)
        text, finish = self._choice_text(choice), finish_reason(choice.get("finish_reason"))
        text, pieces, truncated = pieces_of(choice, text, want)
        whole = text
        text, pieces, finish = apply_stop_when(text, pieces, finish, stop_when, want, truncated)
        text, pieces, finish, generated = cap(text, pieces, finish, max_tokens)
        if not want:
            generated = int(usage.get("completion_tokens") or 0)
        elif text == whole and finish == "length" and "completion_tokens" in usage:
            # the pieces undercount where llama.cpp's server sends one entry for a character of
            # several tokens; at "length" its count has no end-of-generation token in it either
            generated = min(int(usage["completion_tokens"]), max_tokens)
        return completion(text, pieces, finish, usage, generated, start)

    def count_tokens(self, text: str) -> int:
        """Token count from the server's tokenize endpoint (a ModelError if it has none)."""
        return len(self._tokenize(text)) - len(self._base_ids()) if text else 0

    def _count_prompt(self, prompt: str) -> int:
        """Prompt tokens for a streamed call (0 when the server cannot tokenize)."""
        if self._find_tokenizer() is None:
            return 0
        return len(self._tokenize(prompt))

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> OpenAIHTTPModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests ----------------------------------------------------------------------------
    # The endpoint and the three hooks below are what a chat-completions backend
    # (flare.lm.openai_chat) changes; retries, streaming, logprob alignment and tokenizing are shared.

    endpoint = "/completions"

    def _choice_text(self, choice: Mapping[str, Any]) -> str:
        """The generated text of a whole (not streamed) choice."""
        return str(choice.get("text") or "")

    def _chunk_text(self, choice: Mapping[str, Any]) -> str:
        """The text a streamed chunk's choice adds."""
        return str(choice.get("text") or "")

    def _body(
        self,
        prompt: str,
        max_tokens: int,
        stop: Sequence[str],
        logprobs: bool,
        bias: Mapping[str, float] | None,
    ) -> dict[str, Any]:
        return self._greedy_body({"prompt": prompt}, max_tokens, stop, {"logprobs": 1} if logprobs else {}, bias)

    def _greedy_body(
        self,
        payload: Mapping[str, Any],
        max_tokens: int,
        stop: Sequence[str],
        logprob_fields: Mapping[str, Any],
        bias: Mapping[str, float] | None,
    ) -> dict[str, Any]:
        """A greedy request for ``payload`` (the prompt or the messages), shared by both endpoints."""
        body: dict[str, Any] = {**self.extra, "model": self._model_name(), **payload,
                                "max_tokens": max_tokens, "temperature": 0, "n": 1, **logprob_fields}  # fmt: skip
        if stop:
            body["stop"] = [s for s in stop if s]
        if bias:
            body["logit_bias"] = dict(bias)
        return body

    def _complete_once(self, body: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        answer = self._post(self.endpoint, body)
        usage = answer.get("usage")
        timings = answer.get("timings")  # llama.cpp reports evaluated prompt tokens here
        usage = dict(usage) if isinstance(usage, dict) else {}
        if (evaluated := _evaluated(timings)) is not None:
            usage["_evaluated"] = evaluated
        return first_choice(answer), usage

    def _complete_streamed(
        self, body: Mapping[str, Any], stop_when: StopWhen
    ) -> tuple[str, list[Piece], FinishReason, dict[str, Any]] | None:
        """Stream until ``stop_when`` holds; None when the stream cannot carry the text.

        llama_cpp.server streams each byte token of a split character as "" and never sends the
        character itself, so a streamed byte token makes the caller fall back to a plain request.
        llama.cpp's C++ server sends each token's bytes, so a token held back without text (it may
        start a stop string) waits for the text that follows, or for the end.
        """
        want = "logprobs" in body
        for attempt in range(2):
            events = self._stream(self.endpoint, {**body, "stream": True})
            try:
                with contextlib.closing(events):  # returning early closes the connection at once
                    return self._read_stream(events, stop_when, want)
            except _StreamCut as cut:
                if attempt:
                    raise ModelError(
                        f"{self.base_url}: the completion stream was cut off twice ({cut}); the answer is incomplete",
                        "the server drops streams (llama.cpp's Python server does when another request "
                        "arrives): send it one request at a time, or use llama-server or vLLM",
                    ) from cut
        raise AssertionError("unreachable")

    def _read_stream(
        self, events: Iterator[dict[str, Any]], stop_when: StopWhen, want: bool
    ) -> tuple[str, list[Piece], FinishReason, dict[str, Any]] | None:
        text, pieces, received = "", list[Piece](), False
        finish: FinishReason | None = None  # until the server says why it stopped
        usage: dict[str, Any] = {}
        pending: list[tuple[str, float]] = []
        for chunk in events:
            received = True
            timings = chunk.get("timings")
            if not usage and isinstance(timings, dict) and (evaluated := _evaluated(timings)) is not None:
                usage = {"prompt_tokens": int(timings.get("cache_n") or 0) + evaluated, "_evaluated": evaluated}
            choice = first_choice(chunk)
            part = self._chunk_text(choice)
            raw = streamed_tokens(choice.get("logprobs"))
            if want and raw and not part:
                if not isinstance((choice.get("logprobs") or {}).get("content"), list):
                    return None
                pending += raw  # llama.cpp holds back text that may start a stop string
            elif part:
                raw, pending = pending + raw, []
                values = [v for _, v in raw]
                if want and not values:
                    raise ModelError("the server streamed a token without its logprob",
                                     SERVER_HINT)  # fmt: skip
                split = want and "".join(t for t, _ in raw) == part
                new = merge_pieces(raw) if split else [(part, sum(values), max(len(values), 1))]
                for piece in new:
                    pieces.append(piece)
                    text += piece[0]
                    if stop_when(text):
                        return text, pieces, "sentence", usage
            if choice.get("finish_reason"):
                finish = finish_reason(choice["finish_reason"])
        if not received:
            return None  # no events: not a streaming server
        if finish is None:
            # A stream that ends without saying why ended early: what came is not a whole answer.
            raise _StreamCut(f"it ended after {len(text)} characters with no finish_reason")
        return text, pieces, finish, usage

    def _post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        for attempt in range(self.max_retries + 1):
            try:
                response = self._client.post(self.base_url + path, json=body)
            except httpx.TransportError as err:
                self._wait(attempt, None, f"{type(err).__name__}: {err}")
                continue
            if response.status_code in RETRYABLE_STATUS:
                self._wait(attempt, response, f"HTTP {response.status_code}")
                continue
            return _json(response, path)
        raise AssertionError("unreachable")  # _wait raises on the last attempt

    def _stream(self, path: str, body: Mapping[str, Any]) -> Generator[dict[str, Any], None, None]:
        for attempt in range(self.max_retries + 1):
            try:
                with self._client.stream("POST", self.base_url + path, json=body) as response:
                    if response.status_code in RETRYABLE_STATUS:
                        response.read()
                        self._wait(attempt, response, f"HTTP {response.status_code}")
                        continue
                    if response.status_code >= 400:
                        response.read()
                        _json(response, path)
                    yield from _sse(response)
                    return
            except (httpx.ConnectError, httpx.ConnectTimeout) as err:  # nothing received yet
                self._wait(attempt, None, f"{type(err).__name__}: {err}")
            except httpx.TransportError as err:  # the connection broke mid-stream
                raise _StreamCut(f"{type(err).__name__}: {err}") from err

    def _wait(self, attempt: int, response: httpx.Response | None, why: str) -> None:
        if attempt >= self.max_retries:
            raise ModelError(
                f"{self.base_url}: request failed after {attempt + 1} attempts ({why})",
                SERVER_HINT,
            )
        delay = self.backoff * 2**attempt
        after = response.headers.get("retry-after") if response is not None else None
        if after and after.replace(".", "", 1).isdigit():
            delay = max(delay, min(float(after), 30.0))
        time.sleep(delay)

    def _model_name(self) -> str:
        with self._probing:
            if self.model is None:
                response = self._client.get(self.base_url + "/models")
                data = _json(response, "/models").get("data") or []
                if not data or not isinstance(data[0], dict) or "id" not in data[0]:
                    raise ModelError(f"{self.base_url}/models lists no model", "name one: URL#model")
                self.model = str(data[0]["id"])
            return self.model

    # -- tokenizer ---------------------------------------------------------------------------

    def _find_tokenizer(self) -> tuple[str, str] | None:
        """The first tokenize dialect the server answers: (path, text key)."""
        with self._probing:
            return self._probe_tokenizer()

    def _probe_tokenizer(self) -> tuple[str, str] | None:
        if self._tokenizer is False:
            root = self.base_url.removesuffix("/v1")
            self._tokenizer = None
            for url, key in ((f"{root}/tokenize", "content"), (f"{root}/extras/tokenize", "input"),
                             (f"{root}/tokenize", "prompt")):  # fmt: skip
                try:
                    ok = self._client.post(url, json=self._tok_body(key, "a")).status_code == 200
                except httpx.TransportError:
                    ok = False
                if ok:
                    self._tokenizer = (url, key)
                    break
        return self._tokenizer if isinstance(self._tokenizer, tuple) else None

    def _tok_body(self, key: str, text: str) -> dict[str, Any]:
        body: dict[str, Any] = {key: text}
        if key == "prompt":
            body["model"] = self._model_name()
        return body

    def _tokenize(self, text: str) -> list[int]:
        found = self._find_tokenizer()
        if found is None:
            raise ModelError(
                f"{self.base_url}: the server has no tokenize endpoint",
                "use llama.cpp's server or vLLM, or do without logit_bias / token counts",
            )
        url, key = found
        tokens = _json(self._client.post(url, json=self._tok_body(key, text)), url).get("tokens")
        if not isinstance(tokens, list):
            raise ModelError(f"{url}: answer has no token list", SERVER_HINT)
        return [int(t["id"] if isinstance(t, dict) else t) for t in tokens]

    def _base_ids(self) -> list[int]:
        """What the server adds to every text (e.g. BOS); subtracted from counts and biases."""
        if self._base is None:
            self._base = self._tokenize("")
        return self._base

    def _map_bias(self, logit_bias: Mapping[str, float]) -> dict[str, float]:
        """Text-keyed bias → token-id-keyed bias (ids of ``key`` and `` key`` as one token)."""
        if not self.supports_logit_bias:
            raise ModelError(
                f"{self.base_url}: logit_bias needs a tokenize endpoint to find token ids",
                "serve the model with llama.cpp or vLLM, or run without logit_bias",
            )
        out: dict[str, float] = {}
        for key, value in logit_bias.items():
            if not key:
                raise ConfigError("a logit_bias key is empty", hint="bias a piece of text like '['")
            if key not in self._bias_ids:
                base = self._base_ids()
                ids = [self._tokenize(form)[len(base) :] for form in (key, " " + key)]
                self._bias_ids[key] = sorted({i[0] for i in ids if len(i) == 1})
            if not self._bias_ids[key]:
                raise ModelError(f"logit_bias key {key!r} is not a single token on this server",
                                 "bias a shorter piece of text")  # fmt: skip
            for token_id in self._bias_ids[key]:
                out[str(token_id)] = out.get(str(token_id), 0.0) + value
        return out


class _StreamCut(Exception):
    """A completion stream ended before its finish reason; the caller retries it once."""


def from_spec(rest: str, **options: Any) -> OpenAIHTTPModel:
    """Build from the part of ``openai:URL#model`` after ``openai:`` (registry factory).

    ``n_threads``/``n_ctx``/``n_contexts``/``special_tokens`` are settings of the server (which
    tokenizes as it was started to), so they are ignored.
    """
    for ignored in ("n_threads", "n_ctx", "n_contexts", "special_tokens", "shift_cache"):
        options.pop(ignored, None)
    url, _, model = rest.partition("#")
    if not url:
        raise ConfigError("openai: spec has no URL", "write openai:http://127.0.0.1:8080/v1#model")
    return OpenAIHTTPModel(url, model or None, **options)


def _json(response: httpx.Response, path: str) -> dict[str, Any]:
    if response.status_code >= 400:
        detail = response.text[:300].strip()
        raise ModelError(f"{path}: HTTP {response.status_code}: {detail}", SERVER_HINT)
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ModelError(f"{path}: the answer is not JSON", SERVER_HINT) from None
    if not isinstance(data, dict):
        raise ModelError(f"{path}: the answer is not a JSON object", SERVER_HINT)
    return data


def _sse(response: httpx.Response) -> Iterator[dict[str, Any]]:
    encoding = response.encoding or "utf-8"
    for raw in _lines(response.iter_bytes()):
        if not raw.startswith(b"data:"):
            continue
        data = raw[5:].decode(encoding, "replace").strip()
        if data == "[DONE]":
            return
        try:
            event = json.loads(data)
        except json.JSONDecodeError:
            raise ModelError("the server streamed malformed JSON", SERVER_HINT) from None
        if isinstance(event, dict) and "error" in event:
            raise ModelError(f"the server streamed an error: {event['error']}", SERVER_HINT)
        if isinstance(event, dict):
            yield event


def _lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The lines of an event stream, without their ends (CR LF, LF or CR, as SSE defines them).

    Split as bytes, and only ``data:`` lines are decoded: cheaper per streamed token than httpx's
    ``iter_lines`` (which decodes every chunk and also breaks lines at U+2028 and other Unicode
    line ends that a server may send inside a JSON string).
    """
    pending = b""
    for chunk in chunks:
        if pending:
            chunk = pending + chunk
            pending = b""
        if not chunk:
            continue
        parts = chunk.splitlines(keepends=True)  # bytes split at CR LF, LF and CR only
        if parts[-1][-1:] != b"\n":  # unfinished, or a CR whose LF may be in the next chunk
            pending = parts.pop()
        for part in parts:
            yield part.rstrip(b"\r\n")
    if pending:
        yield pending.rstrip(b"\r\n")


def _evaluated(timings: object) -> int | None:
    """The prompt tokens llama.cpp evaluated (not taken from its cache), from its ``timings``."""
    if isinstance(timings, dict) and isinstance(timings.get("prompt_n"), int):
        return int(timings["prompt_n"])
    return None
