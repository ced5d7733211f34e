"""CPU per streamed token in the serving path: the event-stream reader and the end-of-draft check.

``flare serve`` with a remote model reads every token as one SSE event and asks, after each,
whether the draft's first sentence is complete or the model started to loop. Both run in the
answer threads and hold the GIL, so their cost is time the event loop (``/healthz``, other
answers' events) waits. This measures each, before and after in one run:

* **stream reader**: httpx's ``iter_lines`` (what ``_sse`` used) against the byte-level line
  splitter (:func:`flare.lm.openai_http._lines`), over the same chunks, JSON decoding included;
* **end-of-draft check**: ``ends_sentence(text) or repeated_ngram(text, n)`` on the whole text
  after every token (what ``StepContext.complete`` asked) against
  :class:`~flare.text.SentenceWatch` / :class:`~flare.text.RepeatWatch`, on an English and a
  Chinese draft of realistic length, and on a long run-on one (a sentence the model never ends).

Usage::

    PYTHONPATH=src .venv/bin/python benchmarks/bench_stream_parse.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterator
from functools import partial

import httpx

from flare.lm.openai_http import _lines
from flare.text import RepeatWatch, SentenceWatch, ends_sentence, repeated_ngram

EN = ("The employee handbook says that travel expenses above five hundred dollars must be approved in "
      "advance by the head of the department, and receipts are kept for seven years.")  # fmt: skip
ZH = "一线城市每晚住宿费不超过六百元，其他城市每晚不超过四百五十元，超出部分由员工自行承担。"
RUN_ON = " ".join(f"item {i} of the list, then" for i in range(60)) + " the end."


def tokens_of(text: str) -> list[str]:
    """Word-ish tokens as a model streams them (leading spaces; each Han character its own)."""
    out: list[str] = []
    for i, c in enumerate(text):
        if out and not c.isspace() and not text[i - 1].isspace() and ord(c) < 0x3000 and ord(text[i - 1]) < 0x3000:
            out[-1] += c
        else:
            out.append(c) if not (out and out[-1] == " ") else out.__setitem__(-1, " " + c)
    return out


def event(token: str) -> bytes:
    choice = {"index": 0, "text": token, "logprobs": {"tokens": [token], "token_logprobs": [-0.1]},
              "finish_reason": None}  # fmt: skip
    return f"data: {json.dumps({'choices': [choice]})}\n\n".encode()


def read_old(chunks: list[bytes]) -> int:
    response = httpx.Response(200, content=iter(chunks), headers={"content-type": "text/event-stream"})
    n = 0
    for line in response.iter_lines():
        if line.startswith("data:"):
            data = line[5:].strip()
            if data != "[DONE]":
                n += isinstance(json.loads(data), dict)
    return n


def read_new(chunks: list[bytes]) -> int:
    response = httpx.Response(200, content=iter(chunks), headers={"content-type": "text/event-stream"})
    n = 0
    for raw in _lines(response.iter_bytes()):
        if raw.startswith(b"data:"):
            data = raw[5:].decode("utf-8", "replace").strip()
            if data != "[DONE]":
                n += isinstance(json.loads(data), dict)
    return n


def check_old(tokens: list[str], n: int) -> int:
    text, calls = "", 0
    for t in tokens:
        text += t
        calls += 1
        if ends_sentence(text) or (n > 0 and repeated_ngram(text, n) is not None):
            break
    return calls


def check_new(tokens: list[str], n: int) -> int:
    ended, repeated = SentenceWatch(), RepeatWatch(n)
    text, calls = "", 0
    for t in tokens:
        text += t
        calls += 1
        if ended(text) or (n > 0 and repeated(text)):
            break
    return calls


def rates(
    before: Callable[[], int], after: Callable[[], int], rounds: int, seconds: float = 0.3
) -> tuple[float, float]:
    """Tokens per second of each: the best of ``rounds``, the two taking turns (the machine is shared)."""
    best = [0.0, 0.0]
    for _ in range(rounds):
        for k, fn in enumerate((before, after)):
            count, t0 = 0, time.perf_counter()
            while (elapsed := time.perf_counter() - t0) < seconds:
                count += fn()
            best[k] = max(best[k], count / elapsed)
    return best[0], best[1]


def rows(rounds: int) -> Iterator[tuple[str, float, float]]:
    chunks = [event(t) for t in tokens_of(EN) * 20] + [b"data: [DONE]\n\n"]
    assert read_old(chunks) == read_new(chunks)
    yield "stream reader (SSE events)", *rates(partial(read_old, chunks), partial(read_new, chunks), rounds)
    for name, text, n in (("end-of-draft check, English draft", EN, 4), ("end-of-draft check, Chinese draft", ZH, 8),
                          ("end-of-draft check, 360-token run-on", RUN_ON, 0)):  # fmt: skip
        tokens = tokens_of(text)
        assert check_old(tokens, n) == check_new(tokens, n)
        before, after = partial(check_old, tokens, n), partial(check_new, tokens, n)
        yield f"{name} ({len(tokens)} tokens)", *rates(before, after, rounds)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    repeated_ngram("热身", 2)  # load jieba before timing
    print(f"{'path':45} {'before tok/s':>13} {'after tok/s':>13} {'after/before':>13}")
    for name, before, after in rows(a.rounds):
        print(f"{name:45} {before:13,.0f} {after:13,.0f} {after / before:12.2f}x")


if __name__ == "__main__":
    main()
