"""The local llama.cpp backend: greedy decoding with native token probabilities and prefix reuse.

Decoding is driven by hand: each step reads the last logits, applies the logit bias, picks the
argmax and records its log-probability, so one pass gives the text and its probabilities (SPEC
M1). ``create_completion(logprobs=...)`` would need ``logits_all=True``, 3–7× slower.

One set of weights serves ``n_contexts`` KV caches, so FLARE's draft prompts (header, question,
answer) and regeneration prompts (header, documents, question, answer) each keep their own
cached prefix and a call only evaluates what its context lacks.

Reuse never changes results. llama.cpp's CPU kernels round differently for batches under 8
tokens and with flash attention, so a reused prefix would drift from a cold evaluation (up to
~0.1 in log-probability, enough to flip greedy choices). Hence flash attention is off, prompts
run in batches of at least 8 tokens (re-running a few cached ones if needed), and the cache of
generated tokens, computed one at a time, is not reused (measured: it would save ~5% of prompt
evaluation in a FLARE loop). Warm calls then match cold ones bit for bit (x86-64, llama-cpp-python
0.3.36).

``shift_cache=True`` is the one exception, and opt-in. A prompt that inserts text into the middle
of a cached one (passages added before the question, as FLARE's rewrites and followed names do)
then keeps the cached text after the insertion: its cache entries are moved along by the
inserted length (llama.cpp's position shift) and only the inserted tokens, which see the prefix
before them, are evaluated. The text after the insertion was not computed with it in view, so
results differ from a cold evaluation of the same prompt; the tokens generated afterwards see
everything. A later prompt without the inserted text (FLARE's next draft after a rewrite) undoes
the insertion: the moved text goes back, as it was computed before, and the prompt goes on from it.

Example::

    lm = LlamaCppModel(default_model_path())
    c = lm.complete("Question: What is the capital of France?\\nAnswer:", max_tokens=16)
    print(c.text, [round(t.prob, 2) for t in c.tokens], c.prompt_tokens_evaluated)
"""

from __future__ import annotations

import codecs
import ctypes
import importlib.util
import logging
import os
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from flare.errors import ConfigError, ModelError
from flare.lm.base import ModelBase, StopWhen
from flare.lm.bundled import MODEL_HINT, default_model_path, gemma3_model_path
from flare.lm.capi import open_library
from flare.lm.gguf import check_model_file
from flare.lm.pieces import common_prefix, trim_to
from flare.lm.stops import append_piece, cut_at_stop
from flare.types import Completion, FinishReason, TokenLogprob

__all__ = [
    "LIBRARIES", "MODEL_HINT", "LlamaCppModel", "LlamaStats", "cut_at_stop", "default_model_path",
    "gemma3_model_path", "open_llama_library",
]  # fmt: skip

# Smallest prompt batch: below it llama.cpp uses kernels that round differently (see above).
_MIN_CHUNK = 8
# Shortest run of cached tokens that ``shift_cache`` moves instead of evaluating again.
_MIN_SHIFT = 16
# A prompt "extends" a context when it keeps all of that context's previous prompt except for
# this many trailing tokens (a boundary token may merge with the appended text).
_EXTEND_SLACK = 2
_backend_ready = False


@dataclass
class LlamaStats:
    """Running totals over every :meth:`LlamaCppModel.complete` call of one instance."""

    calls: int = 0
    prompt_tokens: int = 0
    prompt_tokens_evaluated: int = 0
    prompt_tokens_shifted: int = 0  # cached tokens moved past an insertion instead of evaluated
    generated_tokens: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class _Reuse:
    """What a context keeps of a prompt (see :meth:`LlamaCppModel._reuse`).

    ``prefix``: tokens its cache shares with the prompt. ``undone``: when not ``None``, the
    cache's last insertion is undone first, and this is the prefix it then shares.
    ``insertion``: ``(size, reuse)`` from :func:`_insertion`, after the prefix kept.
    """

    prefix: int
    insertion: tuple[int, int] | None = None
    undone: int | None = None

    @property
    def kept(self) -> int:
        """Tokens of the prompt not evaluated again."""
        start = self.prefix if self.undone is None else self.undone
        return start + (self.insertion[1] if self.insertion else 0)


@dataclass
class _Context:
    """One llama.cpp context: its KV cache holds exactly ``tokens`` at positions 0..n-1."""

    ptr: Any
    tokens: list[int] = field(default_factory=list)
    prompt_len: int = 0  # length of the last prompt evaluated here (in batches)
    prompt_logits: npt.NDArray[np.float32] | None = None  # logits after that prompt's last token
    last_used: int = -1
    # shift_cache: the last insertion, (at, size, end). Tokens[at:at + size] were inserted;
    # tokens[at + size:end] were computed before that, without them in view.
    inserted: tuple[int, int, int] | None = None

    def before_insertion(self) -> list[int] | None:
        """The prompt this context held before its last insertion, as far as it is still cached."""
        if self.inserted is None:
            return None
        at, size, end = self.inserted
        return self.tokens[:at] + self.tokens[at + size : end]


class LlamaCppModel(ModelBase):
    """A GGUF model run by llama.cpp, implementing :class:`~flare.lm.base.LanguageModel`.

    Construction is cheap: the file is opened on first use. ``n_ctx`` is the window of each of
    the ``n_contexts`` contexts, ``n_threads`` defaults to ``$FLARE_THREADS`` or the CPU count.
    ``special_tokens`` lets prompt text such as ``<|im_start|>`` become control tokens: enable it
    only for prompts rendered from :attr:`chat_template`, since documents could otherwise inject
    ``shift_cache`` reuses the cached text after an insertion (see the module notes: it changes
    results). ``extra_buffers`` enables llama.cpp's weight repacking (AMX/AVX kernels); it is off because
    the AMX path dies with SIGILL on hosts that advertise AMX but do not grant it (as in some
    sandboxes). ``library`` picks the llama.cpp build (:func:`open_llama_library`): the binary
    ``xllamacpp`` wheel by default, a compiled llama-cpp-python when installed.

    Not thread-safe across calls by design of llama.cpp contexts; calls are serialised by a lock.
    """

    supports_logprobs = True
    supports_logit_bias = True
    supports_scoring = True

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_contexts: int = 2,
        seed: int = 0,
        verbose: bool = False,
        name: str | None = None,
        special_tokens: bool = False,
        extra_buffers: bool = False,
        library: str | None = None,
        shift_cache: bool = False,
    ) -> None:
        if n_ctx < 8:
            raise ConfigError(f"n_ctx must be at least 8, got {n_ctx}", hint="use e.g. 4096")
        if n_contexts < 1:
            raise ConfigError(f"n_contexts must be ≥ 1, got {n_contexts}", hint="use 1 or 2")
        self.model_path = Path(model_path)
        self.name = name or f"llama.cpp:{self.model_path.stem}"
        self.n_ctx = n_ctx
        self.n_threads = _resolve_threads(n_threads)
        self.n_contexts = n_contexts
        self.seed = seed  # decoding is greedy; kept for API symmetry and future sampling
        self.verbose = verbose
        self.special_tokens = special_tokens
        self.extra_buffers = extra_buffers
        self.library = library
        self.shift_cache = shift_cache
        self.stats = LlamaStats()
        self._lock = threading.RLock()
        self._C: Any = None
        self._model: Any = None
        self._vocab: Any = None
        self._n_vocab = 0
        self._contexts: list[_Context] = []
        self._clock = 0
        self._pieces: dict[int, bytes] = {}
        self._vocab_text: list[str] | None = None
        self._bias_ids: dict[str, npt.NDArray[np.intp]] = {}
        self._context_ptrs: list[Any] = []  # shared with the finalizer, which frees them
        self._finalizer: weakref.finalize[Any, Any] | None = None

    # -- public API ------------------------------------------------------------------------------

    @property
    def chat_template(self) -> str | None:
        """The model's chat template from its GGUF metadata (never applied automatically)."""
        with self._lock:
            raw = self._load().llama_model_chat_template(self._model, None)
        return raw.decode("utf-8") if raw else None

    def load(self) -> None:
        """Open the model now instead of on first use (e.g. to fail fast or time it apart)."""
        with self._lock:
            self._load()

    def count_tokens(self, text: str) -> int:
        """Number of tokens ``text`` encodes to, without the BOS token."""
        with self._lock:
            return len(self._tokenize(text, add_special=False))

    def reset_cache(self, keep: str = "") -> None:
        """Forget every cached prefix; with ``keep``, leave each context holding just ``keep``.

        ``reset_cache(header)`` puts every one of the ``n_contexts`` contexts in the state of a
        model that has evaluated the prompt header and nothing else (evaluating it where it is
        missing, once), so the next calls evaluate everything after it: a fair start for timing.
        """
        with self._lock:
            if not keep:
                for c in self._contexts:
                    self._truncate(c, 0)
                    c.prompt_len, c.prompt_logits = 0, None
                return
            ids = self._tokenize(keep, add_special=True)
            if len(ids) > self.n_ctx:
                raise ModelError(f"the text to keep is {len(ids)} tokens, more than n_ctx={self.n_ctx}")
            while len(self._contexts) < self.n_contexts:
                self._new_context()
            for c in self._contexts:
                if common_prefix(c.tokens[: c.prompt_len], ids) == len(ids):  # holds all of it: cut after
                    c.prompt_len, c.prompt_logits = self._truncate(c, len(ids)), None
                else:
                    self._prefill(c, ids)  # keeps what it shares with ``keep``, evaluates the rest

    def close(self) -> None:
        """Free the contexts and the weights now (a later call loads them again)."""
        with self._lock:
            if self._finalizer is not None:
                self._finalizer()
            self._contexts, self._context_ptrs = [], []
            self._model, self._C, self._finalizer = None, None, None

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int,
        stop: Sequence[str] = (),
        stop_when: StopWhen | None = None,
        logit_bias: Mapping[str, float] | None = None,
    ) -> Completion:
        """Greedily continue ``prompt`` (see :class:`~flare.lm.base.LanguageModel`).

        Finish reasons: ``"stop"`` (stop sequence or end-of-text token), ``"sentence"``
        (``stop_when`` said so), ``"length"`` (``max_tokens`` or the context window is full).
        Byte tokens are merged into whole characters carrying the summed log-probability (a
        character cut off by ``max_tokens`` is dropped; bytes that are not UTF-8 become U+FFFD).
        Raises :class:`ModelError` when the prompt alone does not fit in ``n_ctx``.
        """
        if max_tokens < 0:
            raise ConfigError(f"max_tokens must be ≥ 0, got {max_tokens}")
        with self._lock:
            start = time.perf_counter()
            C = self._load()
            ids = self._tokenize(prompt, add_special=True)
            if not ids:
                raise ModelError("the prompt is empty", hint="give the model some text to continue")
            if len(ids) > self.n_ctx:
                raise ModelError(
                    f"the prompt is {len(ids)} tokens, more than the context window n_ctx={self.n_ctx}",
                    hint="use fewer or shorter documents, or raise n_ctx",
                )
            ctx, reuse = self._pick(ids)
            logits, evaluated = self._prefill(ctx, ids, reuse)
            bias = self._bias_vector(logit_bias) if logit_bias else None
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            tokens: list[TokenLogprob] = []
            finish: FinishReason = "length"
            text, pending, generated = "", 0.0, 0
            while generated < max_tokens:
                scores = logits + bias if bias is not None else logits
                tok = int(np.argmax(scores))
                top = scores[tok]
                pending -= float(np.log(np.exp(scores - top).sum(dtype=np.float64)))
                if C.llama_vocab_is_eog(self._vocab, tok):
                    finish = "stop"
                    break
                generated += 1
                chunk = decoder.decode(self._piece(tok))
                if chunk:  # whole characters only: a split UTF-8 byte waits for the rest
                    tokens, text, ended = append_piece(tokens, text, TokenLogprob(chunk, pending), stop, stop_when)
                    pending = 0.0
                    if ended is not None:
                        finish = ended
                        break
                if generated >= max_tokens or len(ctx.tokens) >= self.n_ctx:
                    break  # "length"; the last token needs no evaluation
                self._decode(ctx, [tok])
                logits = self._logits(ctx)
            seconds = time.perf_counter() - start
            self.stats.calls += 1
            self.stats.prompt_tokens += len(ids)
            self.stats.prompt_tokens_evaluated += evaluated
            self.stats.generated_tokens += generated
            self.stats.seconds += seconds
            return Completion(
                text=text,
                tokens=tuple(tokens),
                finish_reason=finish,
                prompt_tokens=len(ids),
                prompt_tokens_evaluated=evaluated,
                generated_tokens=generated,
                seconds=seconds,
            )

    def score(self, prompt: str, continuation: str) -> Completion:
        """Log-probabilities of ``continuation``'s tokens after ``prompt`` (teacher forcing).

        The prompt goes through the same prefix cache as :meth:`complete` (a prompt that extends
        a context's last prompt costs only its new tokens) and the continuation is evaluated in
        one batch that returns the logits of every position. ``tokens`` join to ``continuation``
        (merged to whole characters as in :meth:`complete`); ``prompt_tokens_evaluated`` counts
        the prompt and continuation tokens evaluated. Used by the support checker's evidence lift.
        """
        if not continuation:
            return Completion(text="", tokens=(), finish_reason="stop")
        with self._lock:
            start = time.perf_counter()
            self._load()
            head = self._tokenize(prompt, add_special=True)
            ids = self._tokenize(prompt + continuation, add_special=True)
            if len(ids) > self.n_ctx:
                raise ModelError(
                    f"prompt and continuation are {len(ids)} tokens, more than n_ctx={self.n_ctx}",
                    hint="use fewer or shorter documents, or raise n_ctx",
                )
            k = min(common_prefix(head, ids), len(ids) - 1)
            if k < 1:
                raise ModelError("the prompt is empty", hint="give the model some text to score after")
            ctx, reuse = self._pick(ids[:k])
            first, evaluated = self._prefill(ctx, ids[:k], reuse)
            cont = ids[k:]
            rows = [first, *self._decode_all(ctx, cont[:-1])]
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            tokens: list[TokenLogprob] = []
            pending = 0.0
            for tok, row in zip(cont, rows, strict=True):
                top = float(row.max())
                pending += float(row[tok]) - top - float(np.log(np.exp(row - top).sum(dtype=np.float64)))
                chunk = decoder.decode(self._piece(tok))
                if chunk:
                    tokens.append(TokenLogprob(chunk, pending))
                    pending = 0.0
            tokens = trim_to(tokens, continuation)
            seconds = time.perf_counter() - start
            self.stats.calls += 1
            self.stats.prompt_tokens += len(ids)
            self.stats.prompt_tokens_evaluated += evaluated + len(cont) - 1
            self.stats.seconds += seconds
            return Completion(
                text="".join(t.text for t in tokens),
                tokens=tuple(tokens),
                finish_reason="stop",
                prompt_tokens=len(ids),
                prompt_tokens_evaluated=evaluated + len(cont) - 1,
                seconds=seconds,
            )

    # -- cache management ------------------------------------------------------------------------

    def _pick(self, ids: list[int]) -> tuple[_Context, _Reuse]:
        """Choose the context for ``ids``: one it extends, else a fresh one, else the closest.

        Plain "longest common prefix" would put every prompt in one context, because the shared
        header makes the most recent context always win; the draft and regeneration prompts
        would then evict each other at every step. A context counts as extended only when no
        other holds more of the prompt: one holding just the header (after
        :meth:`reset_cache`) would otherwise take a rewrite's prompt and evaluate the question's
        documents again, which the draft's context already holds. Returns the context with what
        it keeps of ``ids`` (for :meth:`_prefill`).
        """
        self._clock += 1
        scored = [(self._reuse(c, ids), c) for c in self._contexts]
        best = max((r.prefix for r, _ in scored), default=0)
        chosen: tuple[_Reuse, _Context] | None = None
        if self.shift_cache:  # the context that keeps most of the prompt, moving cached text if need be
            most = max(scored, key=lambda s: (s[0].kept, -s[1].last_used), default=None)
            chosen = most if most is not None and most[0].kept > best else None
        if chosen is None:
            # A context holding only the header "extends" every prompt; it is not the one to take
            # when another holds more of this prompt (the question's documents, say).
            extends = [(r, c) for r, c in scored
                       if c.prompt_len and r.prefix >= max(c.prompt_len - _EXTEND_SLACK, best)]  # fmt: skip
            if extends:
                chosen = max(extends, key=lambda s: (s[0].prefix, -s[1].last_used))
            elif empty := [(r, c) for r, c in scored if not c.tokens]:
                chosen = min(empty, key=lambda s: s[1].last_used)
            elif len(self._contexts) < self.n_contexts:
                chosen = (_Reuse(0), self._new_context())
            else:
                chosen = max(scored, key=lambda s: (s[0].prefix, -s[1].last_used))
        reuse, context = chosen
        context.last_used = self._clock
        return context, reuse

    def _prefill(self, c: _Context, ids: list[int], reuse: _Reuse | None = None) -> tuple[npt.NDArray[np.float32], int]:
        """Evaluate the part of ``ids`` that ``c`` lacks; return the next-token logits.

        ``reuse`` is what :meth:`_pick` found ``c`` keeps of ``ids`` (worked out here if not given).
        """
        r = self._reuse(c, ids) if reuse is None else reuse
        keep = r.prefix
        if keep == len(ids) == c.prompt_len and c.prompt_logits is not None:
            self._truncate(c, keep)  # same prompt again: its logits are still valid
            return c.prompt_logits, 0
        found = r.insertion
        if r.undone is not None:  # the prompt goes on from what the context held before its last insertion
            if self._undo_insertion(c):
                keep = r.undone
            else:
                keep, found = 0, None
        if found:
            size, kept = found
            if self._truncate(c, keep + kept) == keep + kept:  # drops the rest and what was generated
                return self._insert(c, ids, keep, size, kept)
        keep = self._truncate(c, max(0, min(keep, len(ids) - _MIN_CHUNK)))  # one batch ≥ _MIN_CHUNK
        self._decode(c, ids[keep:])
        logits = self._logits(c).copy()
        c.prompt_len, c.prompt_logits = len(ids), logits
        return logits, len(ids) - keep

    def _reuse(self, c: _Context, ids: list[int]) -> _Reuse:
        """What ``c`` keeps of ``ids``: its common prefix and, with ``shift_cache``, cached text
        moved past an insertion — from its cache as it is, or from the cache before its last
        insertion when that keeps more (the draft after a rewrite)."""
        cached = c.tokens[: c.prompt_len]
        prefix = common_prefix(cached, ids)
        if not self.shift_cache:
            return _Reuse(prefix)
        now = _Reuse(prefix, _insertion(cached, ids, prefix))
        before = c.before_insertion()
        if before is None:
            return now
        undone = common_prefix(before, ids)
        then = _Reuse(prefix, _insertion(before, ids, undone), undone=undone)
        return then if then.kept > now.kept else now

    def _undo_insertion(self, c: _Context) -> bool:
        """Remove ``c``'s last inserted tokens and move the text after them back: the cache then
        holds what it held before the insertion (up to where that text ended). False when the
        cache could not be cut and was cleared instead."""
        assert c.inserted is not None
        at, size, end = c.inserted
        before = c.before_insertion() or []
        C = self._load()
        memory = C.llama_get_memory(c.ptr)
        undone = bool(C.llama_memory_seq_rm(memory, 0, end, -1) and C.llama_memory_seq_rm(memory, 0, at, at + size))
        if undone:
            C.llama_memory_seq_add(memory, 0, at + size, end, -size)
            c.tokens = before
        else:
            C.llama_memory_clear(memory, True)
            c.tokens = []
        c.prompt_len, c.prompt_logits, c.inserted = len(c.tokens), None, None
        return undone

    def _insert(self, c: _Context, ids: list[int], at: int, size: int,
                reuse: int) -> tuple[npt.NDArray[np.float32], int]:  # fmt: skip
        """Evaluate ``ids``, whose ``size`` tokens from ``at`` are inserted before ``reuse`` cached ones.

        The cached run moves ``size`` positions on; the inserted tokens are evaluated in a
        second sequence that holds only the prefix, so they see it and not the moved run (as
        their positions say), then join sequence 0; the tokens after the run follow as usual.
        """
        C = self._load()
        memory = C.llama_get_memory(c.ptr)
        end = at + reuse  # ``c`` holds exactly ``end`` tokens
        C.llama_memory_seq_add(memory, 0, at, end, size)
        C.llama_memory_seq_cp(memory, 0, 1, 0, at)
        try:
            self._batch(c, ids[at : at + size], start=at, seq=1)
            C.llama_memory_seq_cp(memory, 1, 0, at, at + size)
        except BaseException:
            C.llama_memory_clear(memory, True)  # half an insertion: start this context over
            c.tokens, c.prompt_len, c.prompt_logits, c.inserted = [], 0, None, None
            raise
        finally:
            C.llama_memory_seq_rm(memory, 1, -1, -1)  # only sequence 0 holds cells between calls
        c.tokens[at:at] = ids[at : at + size]
        self._decode(c, ids[end + size :])
        logits = self._logits(c).copy()
        c.prompt_len, c.prompt_logits = len(ids), logits
        c.inserted = (at, size, end + size)
        self.stats.prompt_tokens_shifted += reuse
        return logits, len(ids) - reuse - at

    def _truncate(self, c: _Context, keep: int) -> int:
        """Drop the cache past ``keep`` tokens; returns how many tokens are really kept."""
        if keep >= len(c.tokens):
            return len(c.tokens)
        C = self._load()
        memory = C.llama_get_memory(c.ptr)
        if not C.llama_memory_seq_rm(memory, 0, keep, -1):
            C.llama_memory_clear(memory, True)  # this model's cache cannot be cut: start over
            keep = 0
        del c.tokens[keep:]
        if keep < c.prompt_len:
            c.prompt_len, c.prompt_logits = 0, None
        if c.inserted is not None:  # what is left of the last insertion
            at, size, end = c.inserted
            c.inserted = (at, size, min(end, keep)) if keep >= at + size else None
        return keep

    def _decode(self, c: _Context, ids: Sequence[int]) -> None:
        C = self._load()
        n_chunks = -(-len(ids) // C.llama_n_batch(c.ptr))
        step = -(-len(ids) // n_chunks) if ids else 1  # even chunks: no short tail batch
        for i in range(0, len(ids), step):
            chunk = ids[i : i + step]
            arr = (C.llama_token * len(chunk))(*chunk)
            rc = C.llama_decode(c.ptr, C.llama_batch_get_one(arr, len(chunk)))
            if rc != 0:
                raise ModelError(
                    f"llama_decode failed with code {rc} at position {len(c.tokens)}",
                    hint="the context window may be full; raise n_ctx or shorten the prompt",
                )
            c.tokens.extend(chunk)

    def _decode_all(self, c: _Context, ids: Sequence[int]) -> list[npt.NDArray[np.float32]]:
        """Evaluate ``ids`` after ``c``'s cache and return the logits after each of them.

        These tokens are never reused as a cached prompt (``prompt_len`` is not moved), so
        their batch sizes cannot change later results.
        """
        out: list[npt.NDArray[np.float32]] = []
        try:
            self._batch(c, ids, start=len(c.tokens), out=out)
        except ModelError:  # drop what a failed batch left, so the cache holds exactly ``tokens``
            C = self._load()
            C.llama_memory_seq_rm(C.llama_get_memory(c.ptr), 0, len(c.tokens), -1)
            raise
        c.tokens.extend(ids)
        return out

    def _batch(self, c: _Context, ids: Sequence[int], *, start: int, seq: int = 0,
               out: list[npt.NDArray[np.float32]] | None = None) -> None:  # fmt: skip
        """Evaluate ``ids`` at positions ``start``… of sequence ``seq``, in batches of ``n_batch``.

        With ``out``, the logits after every token are appended to it. ``c.tokens`` is left as is.
        """
        C = self._load()
        size = C.llama_n_batch(c.ptr)
        for i in range(0, len(ids), size):
            chunk = ids[i : i + size]
            batch = C.llama_batch_init(len(chunk), 0, 1)
            try:
                for j, tok in enumerate(chunk):
                    batch.token[j] = tok
                    batch.pos[j] = start + i + j
                    batch.n_seq_id[j] = 1
                    batch.seq_id[j][0] = seq
                    batch.logits[j] = 1 if out is not None else int(j == len(chunk) - 1)
                batch.n_tokens = len(chunk)
                rc = C.llama_decode(c.ptr, batch)
                if rc != 0:
                    raise ModelError(f"llama_decode failed with code {rc} at position {start + i}",
                                     hint="the context window may be full; raise n_ctx")  # fmt: skip
                if out is not None:
                    for j in range(len(chunk)):
                        ptr = C.llama_get_logits_ith(c.ptr, j)
                        out.append(np.ctypeslib.as_array(ptr, shape=(self._n_vocab,)).copy())
            finally:
                C.llama_batch_free(batch)

    def _logits(self, c: _Context) -> npt.NDArray[np.float32]:
        C = self._load()
        ptr = C.llama_get_logits_ith(c.ptr, -1)
        return np.ctypeslib.as_array(ptr, shape=(self._n_vocab,))

    # -- loading -----------------------------------------------------------------------------------

    def _load(self) -> Any:
        if self._C is not None:
            return self._C
        path = self.model_path
        check_model_file(path)
        C = open_llama_library(self.library, verbose=self.verbose)
        params = C.llama_model_default_params()
        params.use_extra_bufts = self.extra_buffers
        model = C.llama_model_load_from_file(str(path).encode("utf-8"), params)
        if model is None:
            raise ModelError(
                f"llama.cpp could not load {path}",
                hint="the file may be truncated or of an unsupported architecture; "
                "try verbose=True to see llama.cpp's log",
            )
        self._model, self._vocab = model, C.llama_model_get_vocab(model)
        self._n_vocab = C.llama_vocab_n_tokens(self._vocab)
        self._finalizer = weakref.finalize(self, _free, C, model, self._context_ptrs)
        self._C = C
        return C

    def _new_context(self) -> _Context:
        C = self._load()
        params = C.llama_context_default_params()
        params.n_ctx = self.n_ctx
        params.n_batch = min(512, self.n_ctx)
        params.n_ubatch = params.n_batch
        params.n_threads = params.n_threads_batch = self.n_threads
        params.swa_full = True  # sliding-window models (Gemma 3) must keep every position to reuse
        params.flash_attn_type = C.LLAMA_FLASH_ATTN_TYPE_DISABLED  # its rounding varies by batch
        if self.shift_cache and "kv_unified" not in {f[0] for f in type(params)._fields_}:
            self.shift_cache = False  # a llama.cpp build without one cache for all sequences
        if self.shift_cache:  # a second sequence evaluates insertions; one cache holds both
            params.n_seq_max, params.kv_unified = 2, True
        ptr = C.llama_init_from_model(self._model, params)
        if ptr is None:
            raise ModelError(
                f"llama.cpp could not create a context of {self.n_ctx} tokens",
                hint="lower n_ctx or n_contexts (memory)",
            )
        self._context_ptrs.append(ptr)  # freed before the weights
        if self.shift_cache and not C.llama_memory_can_shift(C.llama_get_memory(ptr)):
            self.shift_cache = False  # e.g. a recurrent model: its cache cannot move; evaluate as usual
        context = _Context(ptr)
        self._contexts.append(context)
        return context

    # -- tokens ------------------------------------------------------------------------------------

    def _tokenize(self, text: str, *, add_special: bool) -> list[int]:
        C = self._load()
        data = text.encode("utf-8")
        size = len(data) + 8
        for _ in range(2):
            buf = (C.llama_token * size)()
            n = C.llama_tokenize(self._vocab, data, len(data), buf, size, add_special, self.special_tokens)
            if n >= 0:
                return list(buf[:n])
            size = -n
        raise ModelError(f"could not tokenize a text of {len(data)} bytes")

    def _piece(self, tok: int) -> bytes:
        """The raw bytes of one token, leading space included (may be part of a character)."""
        piece = self._pieces.get(tok)
        if piece is None:
            C = self._load()
            buf = ctypes.create_string_buffer(256)
            n = C.llama_token_to_piece(self._vocab, tok, buf, 256, 0, False)
            piece = self._pieces[tok] = buf.raw[: max(n, 0)]
        return piece

    def _bias_vector(self, logit_bias: Mapping[str, float]) -> npt.NDArray[np.float32]:
        """Dense bias over the vocabulary: ``bias[key]`` for every token whose text starts with key.

        A token's text is compared with and without its leading space, so ``"["`` also biases
        ``" ["``. The token lists are computed once per key.
        """
        vec = np.zeros(self._n_vocab, dtype=np.float32)
        for key, value in logit_bias.items():
            if not key:
                raise ConfigError("a logit_bias key is empty", hint="bias a piece of text like '['")
            ids = self._bias_ids.get(key)
            if ids is None:
                if self._vocab_text is None:
                    raw = (self._piece(t) for t in range(self._n_vocab))
                    self._vocab_text = [p.decode("utf-8", errors="ignore") for p in raw]
                match = [t.startswith(key) or (t[:1] == " " and t[1:].startswith(key)) for t in self._vocab_text]
                ids = self._bias_ids[key] = np.flatnonzero(match)
            vec[ids] += value
        return vec


def _insertion(cached: Sequence[int], ids: Sequence[int], at: int) -> tuple[int, int] | None:
    """``(size, reuse)`` when ``ids`` inserts ``size`` tokens at ``at`` before ``reuse`` of ``cached[at:]``.

    ``ids`` and ``cached`` share their first ``at`` tokens; the longest run of ``cached[at:]``
    that ``ids`` repeats after the insertion must be at least :data:`_MIN_SHIFT` tokens, and it
    stops one token short of the prompt's end, which is evaluated for its logits.

        >>> _insertion([1, 2] + list(range(100, 120)), [1, 2, 7, 8] + list(range(100, 120)) + [9], 2)
        (2, 20)
    """
    tail = cached[at:]
    if len(tail) < _MIN_SHIFT:
        return None
    head = list(tail[:_MIN_SHIFT])
    for size in range(1, len(ids) - at - _MIN_SHIFT):
        if list(ids[at + size : at + size + _MIN_SHIFT]) == head:
            reuse = min(common_prefix(tail, ids[at + size :]), len(ids) - at - size - 1)
            return (size, reuse) if reuse >= _MIN_SHIFT else None
    return None


def _resolve_threads(n_threads: int | None) -> int:
    if n_threads is None:
        env = os.environ.get("FLARE_THREADS")
        if env is None:
            # Leave one core free: llama.cpp's worker threads spin at barriers, and when another
            # process (or our own Python-side sampling) takes a core they stall. Measured on 2
            # cores with other work running: 2 threads 0.8-3.7 tok/s, 1 thread 20-27 tok/s.
            return max(1, (os.cpu_count() or 2) - 1)
        try:
            n_threads = int(env)
        except ValueError:
            raise ConfigError(f"FLARE_THREADS={env!r} is not a number", hint="e.g. 4") from None
    if n_threads < 1:
        raise ConfigError(f"n_threads must be ≥ 1, got {n_threads}", hint="e.g. 4")
    return n_threads


LIBRARIES = ("auto", "xllamacpp", "native")


def open_llama_library(library: str | None = None, *, verbose: bool = False) -> Any:
    """llama.cpp's C API: ``"xllamacpp"`` (the binary wheel flare depends on, through
    :mod:`flare.lm.capi`), ``"native"`` (a locally compiled llama-cpp-python, the ``native``
    extra), or ``"auto"`` (the default, or ``$FLARE_LLAMA_LIB``): native when installed.
    """
    global _backend_ready
    choice = (library or os.environ.get("FLARE_LLAMA_LIB") or "auto").strip().lower()
    if choice not in LIBRARIES:
        raise ConfigError(f"unknown llama.cpp library {choice!r}", hint=f"use one of {', '.join(LIBRARIES)}")
    # llama.cpp's load log is noise unless asked for (verbose=True).
    level = logging.DEBUG if verbose else logging.CRITICAL
    if choice == "auto":
        choice = "native" if importlib.util.find_spec("llama_cpp") is not None else "xllamacpp"
    if choice == "xllamacpp":
        logging.getLogger("flare.llama").setLevel(level)
        return open_library()
    try:
        import llama_cpp
    except ImportError as e:
        raise ModelError("llama-cpp-python is not installed", hint="pip install 'flare-rag[native]'") from e
    # llama-cpp-python's level map is off by one for this llama.cpp: only CRITICAL silences it.
    logging.getLogger("llama-cpp-python").setLevel(level)
    if not _backend_ready:
        llama_cpp.llama_backend_init()
        _backend_ready = True
    return llama_cpp


def _free(C: Any, model: Any, contexts: list[Any]) -> None:
    for ptr in contexts:
        C.llama_free(ptr)
    C.llama_model_free(model)
