"""A transformers (PyTorch) model in-process: ``hf:MODEL`` on a GPU or the CPU, offline.

:class:`HFModel` loads a causal LM with ``transformers`` from a local directory, a model name
already in the Hugging Face cache (never downloaded: ``local_files_only``), or a GGUF file
(transformers dequantizes it; needs the ``gguf`` package), and implements
:class:`~flare.lm.base.LanguageModel` and :class:`~flare.lm.base.ScoringModel` the way the
in-process llama.cpp backend does:

* **Greedy, with the chosen token's probability from the same forward pass** (after
  ``logit_bias``, the distribution the choice was made from), byte tokens merged into whole
  characters.
* **Key/value cache reuse.** Each call keeps its cache (``past_key_values``) and the token ids it
  holds; the next prompt evaluates only what comes after the longest shared prefix. A rejected
  draft is dropped by cropping the cache back to the prompt it was drafted from. ``n_caches``
  caches (default 2) keep the draft prompts (no documents) and the rewrite prompts (with
  documents) from evicting each other.
* **Scoring in one pass.** :meth:`HFModel.score` evaluates a whole continuation in one forward
  pass after the cached prompt and reads every position's logits (the evidence lift of the
  support checker).

Install: ``pip install 'flare-rag[transformers]'`` after a torch that suits your machine (a CPU
build, or CUDA). Specs: ``hf:DIR``, ``hf:NAME``, ``hf:FILE.gguf``, ``hf:smollm2`` (the bundled
SmolLM2 GGUF), each optionally followed by ``;device=cuda|cpu`` and ``;dtype=float32|bfloat16|
float16``.

Example::

    lm = HFModel("Qwen/Qwen2.5-0.5B-Instruct", device="cuda")   # from the local HF cache
    c = lm.complete("Question: What is the capital of France?\\nAnswer:", max_tokens=16)
    print(c.text, [round(t.prob, 2) for t in c.tokens])
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flare.errors import ConfigError, ModelError
from flare.lm.base import ModelBase, StopWhen
from flare.lm.pieces import common_prefix, trim_to
from flare.lm.stops import append_piece
from flare.types import Completion, FinishReason, TokenLogprob

__all__ = ["INSTALL_HINT", "HFModel", "from_spec"]

INSTALL_HINT = "pip install 'flare-rag[transformers]' (after a torch build for your machine)"
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("auto", "float32", "bfloat16", "float16")


@dataclass
class _Cache:
    """One key/value cache and the token ids it holds."""

    ids: list[int] = field(default_factory=list)
    prompt_len: int = 0  # how many of ``ids`` were the last prompt (the rest: tokens generated)
    kv: Any = None
    last_used: int = 0


class HFModel(ModelBase):
    """A transformers causal LM (see the module docstring). Loads on first use or :meth:`load`.

    ``model`` is a directory, a cached model name or a ``.gguf`` file; ``device`` ``auto`` takes
    CUDA when it is there; ``dtype`` ``auto`` is float32 on the CPU and bfloat16 (float16 where
    the GPU lacks it) on CUDA. ``n_threads`` sets torch's CPU threads (default
    ``$FLARE_THREADS``, else cores - 1). One call runs at a time (``max_parallel`` is 1).
    """

    supports_logprobs = True
    supports_logit_bias = True
    supports_scoring = True
    max_parallel = 1

    def __init__(
        self,
        model: str | Path,
        *,
        device: str = "auto",
        dtype: str = "auto",
        n_threads: int | None = None,
        n_caches: int = 2,
        name: str | None = None,
    ) -> None:
        if device not in DEVICES:
            raise ConfigError(f"unknown device {device!r}", f"choose one of: {', '.join(DEVICES)}")
        if dtype not in DTYPES:
            raise ConfigError(f"unknown dtype {dtype!r}", f"choose one of: {', '.join(DTYPES)}")
        if n_caches < 1:
            raise ConfigError(f"n_caches must be ≥ 1, got {n_caches}", "e.g. 2")
        self.model_ref = str(model)
        self.name = name or f"hf:{self.model_ref}"
        self.device_choice, self.dtype_choice = device, dtype
        self.n_threads, self.n_caches = n_threads, n_caches
        self._lock = threading.RLock()
        self._model: Any = None
        self._tok: Any = None
        self._torch: Any = None
        self._caches: list[_Cache] = []
        self._clock = 0
        self._eos: set[int] = set()
        self._cache_arg = "past_key_values"
        self._vocab_text: list[str] | None = None
        self._bias_ids: dict[str, list[int]] = {}
        self.n_ctx = 0

    # -- loading ---------------------------------------------------------------------------------

    def load(self) -> None:
        """Load the model now instead of on first use."""
        with self._lock:
            self._load()

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        try:
            import torch
            import transformers as _transformers
        except ImportError as err:
            raise ModelError(f"the hf: backend needs {err.name}, which is not installed", INSTALL_HINT) from None
        from flare.lm.llama import _resolve_threads

        transformers: Any = _transformers  # its stubs are partial; flare uses a small, stable part

        device = self.device_choice
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if device == "cuda" and not torch.cuda.is_available():
            raise ModelError("device=cuda, but torch sees no CUDA device", "use ;device=cpu, or a CUDA build of torch")
        dtype = self.dtype_choice
        if dtype == "auto":
            dtype = "float32" if device == "cpu" else ("bfloat16" if torch.cuda.is_bf16_supported() else "float16")
        if device == "cpu":
            torch.set_num_threads(_resolve_threads(self.n_threads))
        where, extra = self._source()
        transformers.utils.logging.disable_progress_bar()
        try:
            tok = transformers.AutoTokenizer.from_pretrained(where, local_files_only=True, **extra)
            model: Any = transformers.AutoModelForCausalLM.from_pretrained(
                where, local_files_only=True, dtype=getattr(torch, dtype), **extra
            )
        except (OSError, ValueError, ImportError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ModelError(
                f"transformers could not load {self.model_ref!r}: {first[:300]}",
                "give a local model directory or a .gguf file, or a name already downloaded to the Hugging "
                "Face cache (flare never downloads); GGUF files need `pip install gguf accelerate`",
            ) from err
        model.to(device)
        model.eval()
        self._torch, self._tok, self.device = torch, tok, device
        eos = model.generation_config.eos_token_id if model.generation_config is not None else None
        eos = eos if eos is not None else tok.eos_token_id
        self._eos = set(eos) if isinstance(eos, list) else ({int(eos)} if eos is not None else set())
        self.n_ctx = int(getattr(model.config, "max_position_embeddings", 0) or 0) or 1 << 30
        # transformers 5 names the key/value cache `cache`; earlier versions `past_key_values`
        self._cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        self._model = model
        return model

    def _source(self) -> tuple[str, dict[str, Any]]:
        ref = self.model_ref
        if ref == "smollm2":
            from flare.lm.bundled import default_model_path

            ref = str(default_model_path())
        path = Path(ref).expanduser()
        if ref.lower().endswith(".gguf"):
            if not path.is_file():
                raise ModelError(f"model file not found: {path}", "give the path to a .gguf file")
            return str(path.parent), {"gguf_file": path.name}
        if path.exists() and not path.is_dir():
            raise ModelError(f"{path} is not a model directory or a .gguf file", "give a directory with config.json")
        return (str(path) if path.is_dir() else ref), {}

    @property
    def chat_template(self) -> str | None:
        """The tokenizer's chat template, if any (the engine reads it to choose ChatML prompts)."""
        with self._lock:
            self._load()
            template = getattr(self._tok, "chat_template", None)
            return template if isinstance(template, str) and template else None

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
        """Greedily continue ``prompt`` (see :class:`~flare.lm.base.LanguageModel`)."""
        if max_tokens < 0:
            raise ConfigError(f"max_tokens must be ≥ 0, got {max_tokens}")
        start = time.perf_counter()
        if max_tokens == 0:
            return Completion("", (), "length", seconds=time.perf_counter() - start)
        with self._lock:
            self._load()
            torch = self._torch
            ids = self._ids(prompt)
            bias = self._bias_vector(logit_bias) if logit_bias else None
            with torch.inference_mode():
                cache = self._pick(ids)
                logits, evaluated = self._prefill(cache, ids)
                anchor = ids[-1:]
                head = self._decode(anchor)
                tokens: list[TokenLogprob] = []
                generated: list[int] = []
                finish: FinishReason = "length"
                text, pending = "", 0.0
                while len(generated) < max_tokens:
                    scores = logits.float() if bias is None else logits.float() + bias
                    logp = torch.log_softmax(scores, dim=-1)
                    tok = int(torch.argmax(scores))
                    pending += float(logp[tok])
                    if tok in self._eos:
                        finish = "stop"
                        break
                    generated.append(tok)
                    chunk = self._decode(anchor + generated)[len(head) + len(text) :]
                    if chunk and not chunk.endswith("\ufffd"):  # whole characters only
                        piece = TokenLogprob(chunk, pending)
                        tokens, text, ended = append_piece(tokens, text, piece, stop, stop_when)
                        pending = 0.0
                        if ended is not None:
                            finish = ended
                            break
                    if len(generated) >= max_tokens or len(cache.ids) + 1 >= self.n_ctx:
                        break  # "length"; the last token needs no evaluation
                    logits = self._forward(cache, [tok])
            seconds = time.perf_counter() - start
            return Completion(text, tuple(tokens), finish, len(ids), evaluated, len(generated), seconds)

    def score(self, prompt: str, continuation: str) -> Completion:
        """Log-probabilities of ``continuation``'s tokens after ``prompt``, in one forward pass.

        The prompt reuses the cache like :meth:`complete`; the continuation's tokens are evaluated
        together and every position's logits read. ``tokens`` join to ``continuation``.
        """
        if not continuation:
            return Completion(text="", tokens=(), finish_reason="stop")
        with self._lock:
            start = time.perf_counter()
            self._load()
            torch = self._torch
            head = self._ids(prompt)
            ids = self._ids(prompt + continuation)
            k = min(common_prefix(head, ids), len(ids) - 1)
            if k < 1:
                raise ModelError("the prompt is empty", hint="give the model some text to score after")
            with torch.inference_mode():
                cache = self._pick(ids[:k])
                keep = self._crop(cache, min(common_prefix(cache.ids, ids), k - 1))
                rows = self._forward(cache, ids[keep:], every=True)[k - 1 - keep :]
                cache.prompt_len = len(ids)
                logp = torch.log_softmax(rows.float(), dim=-1)
            cont = ids[k:]
            anchor = ids[k - 1 : k]
            base = self._decode(anchor)
            tokens: list[TokenLogprob] = []
            text, pending = "", 0.0
            for i, tok in enumerate(cont):
                pending += float(logp[i, tok])
                chunk = self._decode(anchor + cont[: i + 1])[len(base) + len(text) :]
                if chunk and not chunk.endswith("\ufffd"):
                    tokens.append(TokenLogprob(chunk, pending))
                    text, pending = text + chunk, 0.0
            tokens = trim_to(tokens, continuation)
            if "".join(t.text for t in tokens) != continuation:  # tokenized differently after the prompt
                tokens = [TokenLogprob(continuation, sum(t.logprob for t in tokens))]
            evaluated = len(ids) - keep
            return Completion("".join(t.text for t in tokens), tuple(tokens), "stop", len(ids), evaluated, 0,
                              time.perf_counter() - start)  # fmt: skip

    def count_tokens(self, text: str) -> int:
        """Number of tokens ``text`` encodes to, without special tokens."""
        if not text:
            return 0
        with self._lock:
            self._load()
            return len(self._tok(text, add_special_tokens=False)["input_ids"])

    def reset_cache(self, keep: str = "") -> None:
        """Forget every cached prompt (the next call evaluates its prompt in full); ``keep`` is
        not kept apart: these caches are whole prompts, not a prefix that can be cut."""
        with self._lock:
            self._caches = []

    def close(self) -> None:
        """Free the model and its caches (a later call loads it again)."""
        with self._lock:
            self._model, self._caches = None, []
            if self._torch is not None and self.device == "cuda":
                self._torch.cuda.empty_cache()

    def __enter__(self) -> HFModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- tokens and caches -----------------------------------------------------------------------

    def _ids(self, text: str) -> list[int]:
        ids = [int(i) for i in self._tok(text, add_special_tokens=True)["input_ids"]]
        if not ids:
            raise ModelError("the prompt is empty", hint="give the model some text to continue")
        if len(ids) > self.n_ctx:
            raise ModelError(f"the prompt is {len(ids)} tokens, more than the model's window of {self.n_ctx}",
                             "use fewer or shorter documents")  # fmt: skip
        return ids

    def _decode(self, ids: list[int]) -> str:
        return str(self._tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False))

    def _pick(self, ids: list[int]) -> _Cache:
        """The cache ``ids`` extends, else a new one while there is room, else the closest."""
        self._clock += 1
        scored = [(common_prefix(c.ids[: c.prompt_len], ids), c) for c in self._caches]
        extends = [(n, c) for n, c in scored if c.prompt_len and n >= c.prompt_len - 1]
        if extends:
            chosen = max(extends, key=lambda s: (s[0], -s[1].last_used))[1]
        elif len(self._caches) < self.n_caches:
            chosen = _Cache()
            self._caches.append(chosen)
        else:
            chosen = max(scored, key=lambda s: (s[0], -s[1].last_used))[1]
        chosen.last_used = self._clock
        return chosen

    def _prefill(self, cache: _Cache, ids: list[int]) -> tuple[Any, int]:
        """Evaluate the part of ``ids`` the cache lacks (at least one token); next-token logits."""
        keep = self._crop(cache, min(common_prefix(cache.ids, ids), len(ids) - 1))
        logits = self._forward(cache, ids[keep:])
        cache.prompt_len = len(ids)
        return logits, len(ids) - keep

    def _crop(self, cache: _Cache, keep: int) -> int:
        """Drop the cache past ``keep`` tokens (a rejected draft); returns the tokens kept."""
        if keep >= len(cache.ids):
            return len(cache.ids)
        if cache.kv is not None and keep > 0 and hasattr(cache.kv, "crop"):
            try:
                cache.kv.crop(keep - len(cache.ids))  # negative: drop that many (transformers 4 and 5)
                if int(cache.kv.get_seq_length()) != keep:
                    keep = 0
            except (ValueError, NotImplementedError, AttributeError):  # e.g. sliding-window layers
                keep = 0
        else:
            keep = 0
        if keep == 0:
            cache.kv = None
        del cache.ids[keep:]
        cache.prompt_len = min(cache.prompt_len, keep)
        return keep

    def _forward(self, cache: _Cache, new: list[int], *, every: bool = False) -> Any:
        """Run ``new`` through the model after the cache; the last (or every) position's logits."""
        torch = self._torch
        if cache.kv is None:
            from transformers import DynamicCache

            cache.kv = DynamicCache()
        x = torch.tensor([new], dtype=torch.long, device=self.device)
        out = self._model(input_ids=x, use_cache=True, **{self._cache_arg: cache.kv})
        cache.kv = out[self._cache_arg]
        cache.ids.extend(new)
        return out.logits[0] if every else out.logits[0, -1]

    def _bias_vector(self, logit_bias: Mapping[str, float]) -> Any:
        """Dense bias: ``bias[key]`` for every token whose text (with or without a leading space)
        starts with ``key``; the token lists are computed once per key."""
        torch = self._torch
        n = int(self._model.get_output_embeddings().weight.shape[0])
        vec = torch.zeros(n, dtype=torch.float32, device=self.device)
        for key, value in logit_bias.items():
            if not key:
                raise ConfigError("a logit_bias key is empty", hint="bias a piece of text like '['")
            if key not in self._bias_ids:
                if self._vocab_text is None:
                    self._vocab_text = [self._decode([i]) for i in range(min(n, len(self._tok)))]
                self._bias_ids[key] = [i for i, t in enumerate(self._vocab_text)
                                       if t.startswith(key) or (t[:1] == " " and t[1:].startswith(key))]  # fmt: skip
            vec[self._bias_ids[key]] += value
        return vec


def from_spec(rest: str, **options: Any) -> HFModel:
    """Build from the part of ``hf:MODEL[;device=…][;dtype=…]`` after the prefix (registry factory).

    ``n_ctx``/``special_tokens`` belong to llama.cpp and are ignored (the model's own window
    applies, and its tokenizer reads its control tokens); ``n_contexts`` sets ``n_caches``;
    ``max_parallel`` is ignored (one model, one call at a time).
    """
    for ignored in ("n_ctx", "special_tokens", "max_parallel", "shift_cache"):
        options.pop(ignored, None)
    if "n_contexts" in options:
        value = options.pop("n_contexts")
        if value is not None:
            options["n_caches"] = value
    model, *pairs = rest.split(";")
    if not model.strip():
        raise ConfigError("hf: spec names no model", "write hf:DIR, hf:NAME, hf:FILE.gguf or hf:smollm2")
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if key.strip() not in ("device", "dtype") or not sep:
            raise ConfigError(f"unknown hf option {pair!r}",
                              "write ;device=cuda|cpu or ;dtype=float32|bfloat16|float16")  # fmt: skip
        options[key.strip()] = value.strip()
    return HFModel(model.strip(), **options)
