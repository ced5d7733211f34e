"""A language model behind an OpenAI-compatible ``/v1/chat/completions`` server, logprobs or not.

Hosted chat models and most gateways serve only the chat endpoint; some return per-token
logprobs there, some none. :class:`OpenAIChatModel` gives the engine the same
:class:`~flare.lm.base.LanguageModel` as the completions backend
(:class:`~flare.lm.openai_http.OpenAIHTTPModel`, whose retries, streaming, cut-stream handling,
logprob alignment, tokenizing and ``max_parallel`` it shares) by turning each prompt into chat
messages:

* **Prompts become turns.** The backend reports a ChatML ``chat_template``, so the engine writes
  its prompts as ChatML turns (system, exemplar turns, the live question, the answer so far);
  each turn becomes one message and the server applies the model's own template. Documents and
  questions cannot open a turn: the engine defuses control-token spellings in them. A prompt
  without turns (``layout=plain``) is sent as text to continue.
* **Continuing the answer.** The answer so far is an open assistant turn. A server that can
  continue a partial assistant message gets it as the last message and generates its
  continuation: llama.cpp's server (it does so by default), vLLM (``continue_final_message``),
  and providers with assistant prefill (``continue=prefill``, or ``continue=prefix`` for those
  that mark the message with ``"prefix": true``). Any other server gets the answer so far as a
  finished assistant message and an instruction to write only what comes next
  (``continue=instruct``); a reply of :data:`DONE` means the answer is complete and comes back
  as an empty completion. ``continue=auto`` (the default) asks the server what it is once: a
  llama.cpp server answers ``/props``, vLLM ``/version``; anything else is instructed.
* **Logprobs** are asked for (``logprobs: true, top_logprobs: 1``) and read from
  ``choices[0].logprobs.content`` where the server returns them (llama.cpp, vLLM, OpenAI's
  non-reasoning models); a server that refuses the field or sends none has
  ``supports_logprobs = False``, and the engine then runs only the methods that need no token
  probabilities (``trigger=support``, the baselines, FLARE instruct; see docs/backends.md).
* **Streaming and cancelling.** With ``stop_when`` (the engine's end of sentence, or a cancelled
  server request) the reply is streamed and the connection closed at once, so the server stops.

The API key comes from ``$FLARE_OPENAI_API_KEY`` (never ``$OPENAI_API_KEY``), as for the
completions backend.

Example::

    lm = OpenAIChatModel("http://127.0.0.1:8080/v1", "smollm2")   # llama.cpp's server
    c = lm.complete("<|im_start|>user\\nWho wrote Hamlet?<|im_end|>\\n<|im_start|>assistant\\nIt was",
                    max_tokens=12)
    print(c.text, lm.supports_logprobs, lm.continuation)

    # A hosted API: ``--model 'openai-chat:https://api.openai.com/v1#gpt-4o-mini'``
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal, get_args

import httpx

from flare.errors import ConfigError, ModelError
from flare.lm.base import StopWhen
from flare.lm.openai_http import DEFAULT_EXTRA, PROBE_TIMEOUT, OpenAIHTTPModel
from flare.lm.openai_logprobs import first_choice
from flare.types import Completion, TokenLogprob

__all__ = ["CHATML_TURNS", "DONE", "Continuation", "OpenAIChatModel", "from_spec", "to_messages"]

Continuation = Literal["auto", "prefill", "vllm", "prefix", "instruct"]
"""How a partial assistant message is continued (see the module docstring)."""
CONTINUATIONS: tuple[str, ...] = get_args(Continuation)

CHATML_TURNS = "<|im_start|>{role}\n{content}<|im_end|>\n"
"""What :attr:`OpenAIChatModel.chat_template` reports: the engine then writes ChatML turns."""

DONE = "DONE"
"""The reply that ends the answer when the server is instructed (it cannot continue a message)."""

CONTINUE_INSTRUCTION = (
    "Continue your last answer from exactly where it stops, without repeating any of it: write only the rest "
    f"of its current sentence, or its next sentence if that one is finished. If nothing is missing, reply {DONE}."
)
PLAIN_SYSTEM = "Continue the text exactly where it stops. Reply with the continuation only."

_TURN = re.compile(r"<\|im_start\|>(system|user|assistant)\n")
_END = "<|im_end|>"
_DONE_REPLY = re.compile(rf"\s*{DONE}[.!]?\s*", re.IGNORECASE)
_WORDLIKE = re.compile(r"[A-Za-z0-9.,;:!?)\]]$")

Message = dict[str, Any]


def to_messages(prompt: str) -> tuple[list[Message], str | None]:
    """Chat messages for ``prompt``, and the open assistant turn's text (``None`` if there is none).

    A prompt of ChatML turns gives one message per closed turn; its last turn, left open, is the
    partial assistant message (``""`` when nothing is written yet). Any other prompt is plain text
    to continue: a system instruction, then the text as the open assistant turn (an instructed
    server gets it as the user's message instead).

    >>> to_messages("<|im_start|>user\\nHi?<|im_end|>\\n<|im_start|>assistant\\nHello")
    ([{'role': 'user', 'content': 'Hi?'}], 'Hello')
    >>> to_messages("Question: Hi?\\nAnswer:")
    ([{'role': 'system', 'content': 'Continue the text exactly where it stops. Reply with the continuation only.'}], \
'Question: Hi?\\nAnswer:')
    """
    parsed = _parse_turns(prompt)
    if parsed is None:
        return [{"role": "system", "content": PLAIN_SYSTEM}], prompt
    return parsed


def _parse_turns(prompt: str) -> tuple[list[Message], str | None] | None:
    starts = list(_TURN.finditer(prompt))
    if not starts or starts[0].start() != 0:
        return None
    messages: list[Message] = []
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(prompt)
        body = prompt[m.end() : end]
        role = m.group(1)
        if _END in body:
            content, _, after = body.partition(_END)
            if after.strip() or _END in after:
                return None  # text between turns: not a ChatML prompt flare wrote
            messages.append({"role": role, "content": content})
        elif i + 1 == len(starts) and role == "assistant":
            return messages, body
        else:
            return None  # only the last turn may be open, and only the assistant's
    return messages, None


class OpenAIChatModel(OpenAIHTTPModel):
    """A :class:`~flare.lm.base.LanguageModel` over an OpenAI-compatible chat endpoint.

    Takes the options of :class:`~flare.lm.openai_http.OpenAIHTTPModel`, and ``continuation``
    (``auto``, ``prefill``, ``vllm``, ``prefix``, ``instruct``; see the module docstring).
    ``extra`` defaults to ``repeat_penalty=1`` for a llama.cpp server (its default penalty would
    make greedy choices differ from the reported probabilities) and to nothing elsewhere: hosted
    APIs refuse fields they do not know. Construction sends no request.
    """

    endpoint = "/chat/completions"

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        continuation: str = "auto",
        extra: Mapping[str, Any] | None = None,
        name: str | None = None,
        **options: Any,
    ) -> None:
        if continuation not in CONTINUATIONS:
            raise ConfigError(f"unknown continuation {continuation!r}", f"choose one of: {', '.join(CONTINUATIONS)}")
        super().__init__(base_url, model, extra={} if extra is None else extra, name=name, **options)
        self.name = name or f"openai-chat:{self.base_url}#{model or ''}"
        self._continuation = continuation
        self._extra_given = extra is not None
        self._kind_lock = threading.Lock()

    # -- capabilities ----------------------------------------------------------------------------

    @property
    def chat_template(self) -> str | None:
        """ChatML turns: the engine writes its prompts as turns, which become chat messages."""
        return CHATML_TURNS

    @property
    def continuation(self) -> str:
        """How a partial answer is continued: ``prefill``, ``vllm``, ``prefix`` or ``instruct``."""
        with self._kind_lock:
            if self._continuation == "auto":
                self._continuation = self._detect()
            return self._continuation

    def _detect(self) -> str:
        root = self.base_url.removesuffix("/v1")
        if _answers_json(self._client, f"{root}/props", "default_generation_settings", "chat_template"):
            if not self._extra_given:
                # timings in every streamed chunk: prompt tokens evaluated vs reused, known even
                # though the stream is closed at the end of a sentence
                self.extra = {**DEFAULT_EXTRA, "timings_per_token": True, **self.extra}
            return "prefill"  # llama.cpp's server continues a trailing assistant message
        if _answers_json(self._client, f"{root}/version", "version"):
            return "vllm"
        return "instruct"

    def _probe_logprobs(self) -> bool:
        _ = self.continuation  # settles the request fields (extra) before the probe
        probe = [{"role": "user", "content": "Hello"}]
        try:
            answer = self._post(self.endpoint, self._request(probe, 1, (), True, None))
        except ModelError as err:
            if "HTTP 4" not in err.message:
                raise
            self._post(self.endpoint, self._request(probe, 1, (), False, None))  # fails if the server does
            return False  # it refuses the logprobs fields
        logprobs = first_choice(answer).get("logprobs")
        content = logprobs.get("content") if isinstance(logprobs, dict) else None
        return isinstance(content, list) and bool(content)

    # -- LanguageModel ---------------------------------------------------------------------------

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int,
        stop: Sequence[str] = (),
        stop_when: StopWhen | None = None,
        logit_bias: Mapping[str, float] | None = None,
    ) -> Completion:
        """Greedily continue ``prompt`` through chat messages (see the module docstring)."""
        if self.continuation != "instruct":
            return super().complete(prompt, max_tokens=max_tokens, stop=stop, stop_when=stop_when,
                                    logit_bias=logit_bias)  # fmt: skip
        turns = _parse_turns(prompt)
        partial = turns[1] if turns is not None else None
        if not partial:  # a first sentence, or plain text: the reply is what comes next anyway
            return super().complete(prompt, max_tokens=max_tokens, stop=stop, stop_when=stop_when,
                                    logit_bias=logit_bias)  # fmt: skip
        guarded = None if stop_when is None else _after_done(stop_when)
        c = super().complete(prompt, max_tokens=max_tokens, stop=stop, stop_when=guarded, logit_bias=logit_bias)
        if _DONE_REPLY.fullmatch(c.text):
            return replace(c, text="", tokens=(), finish_reason="stop")
        return _spaced(c, partial)

    # -- requests --------------------------------------------------------------------------------

    def _body(
        self,
        prompt: str,
        max_tokens: int,
        stop: Sequence[str],
        logprobs: bool,
        bias: Mapping[str, float] | None,
    ) -> dict[str, Any]:
        how = self.continuation
        messages, partial = to_messages(prompt)
        body_extra: dict[str, Any] = {}
        if how == "instruct" and _parse_turns(prompt) is None:  # plain text: the user's, to continue
            messages.append({"role": "user", "content": prompt})
        elif partial:
            if how == "instruct":
                messages += [{"role": "assistant", "content": partial},
                             {"role": "user", "content": CONTINUE_INSTRUCTION}]  # fmt: skip
            else:
                last: Message = {"role": "assistant", "content": partial}
                if how == "prefix":
                    last["prefix"] = True
                messages.append(last)
                if how == "vllm":
                    body_extra = {"continue_final_message": True, "add_generation_prompt": False}
        return {**self._request(messages, max_tokens, stop, logprobs, bias), **body_extra}

    def _request(
        self,
        messages: list[Message],
        max_tokens: int,
        stop: Sequence[str],
        logprobs: bool,
        bias: Mapping[str, float] | None,
    ) -> dict[str, Any]:
        # top_logprobs=1: llama.cpp sends 20 alternatives per token unless told.
        fields = {"logprobs": True, "top_logprobs": 1} if logprobs else {}
        return self._greedy_body({"messages": messages}, max_tokens, stop, fields, bias)

    def _complete_once(self, body: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        choice, usage = super()._complete_once(body)
        last = body["messages"][-1]
        message = choice.get("message")
        if last.get("role") == "assistant" and isinstance(message, dict):
            # llama.cpp's server answers a continued message with the whole message, prefix included
            content, partial = str(message.get("content") or ""), str(last.get("content") or "")
            if partial and content.startswith(partial):
                choice["message"] = {**message, "content": content[len(partial) :]}
        return choice, usage

    def _choice_text(self, choice: Mapping[str, Any]) -> str:
        message = choice.get("message")
        return str(message.get("content") or "") if isinstance(message, dict) else ""

    def _chunk_text(self, choice: Mapping[str, Any]) -> str:
        delta = choice.get("delta")
        return str(delta.get("content") or "") if isinstance(delta, dict) else ""


def _answers_json(client: httpx.Client, url: str, *keys: str) -> bool:
    """Whether ``url`` answers a JSON object with one of ``keys`` (a probe: errors mean no)."""
    try:
        response = client.get(url, timeout=PROBE_TIMEOUT)
        data = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return False
    return isinstance(data, dict) and any(k in data for k in keys)


def _after_done(stop_when: StopWhen) -> StopWhen:
    """``stop_when`` that is not asked while the reply may still be the :data:`DONE` marker."""

    def check(text: str) -> bool:
        head = text.strip().upper()
        if DONE.startswith(head) or _DONE_REPLY.fullmatch(text):
            return False
        return stop_when(text)

    return check


def _spaced(c: Completion, partial: str) -> Completion:
    """An instructed reply starts afresh; put back the space a continuation of ``partial`` has."""
    if not c.text or c.text[0].isspace() or not _WORDLIKE.search(partial) or not c.text[0].isalnum():
        return c
    tokens = c.tokens
    if tokens:
        tokens = (TokenLogprob(" " + tokens[0].text, tokens[0].logprob), *tokens[1:])
    return replace(c, text=" " + c.text, tokens=tokens)


def from_spec(rest: str, **options: Any) -> OpenAIChatModel:
    """Build from the part of ``openai-chat:URL#MODEL[;continue=HOW]`` after the prefix.

    ``n_threads``/``n_ctx``/``n_contexts``/``special_tokens`` are settings of the server and are
    ignored.
    """
    for ignored in ("n_threads", "n_ctx", "n_contexts", "special_tokens"):
        options.pop(ignored, None)
    url, _, fragment = rest.partition("#")
    model, *pairs = fragment.split(";")
    if not url:
        raise ConfigError("openai-chat: spec has no URL",
                          "write openai-chat:http://127.0.0.1:8080/v1#model")  # fmt: skip
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if key.strip() != "continue" or not sep:
            raise ConfigError(f"unknown openai-chat option {pair!r}",
                              f"write ;continue=HOW with HOW one of {', '.join(CONTINUATIONS)}")  # fmt: skip
        options["continuation"] = value.strip()
    return OpenAIChatModel(url, model or None, **options)
