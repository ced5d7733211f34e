"""The processes ``bench_load.py`` starts: the flare server under test and the model servers.

Each runs in its own child process (``python load_servers.py flare|fake|llama …``) on 127.0.0.1,
so the load generator, flare and the model do not share an interpreter.

Model specs (``--lm``), each optionally ``@N`` for the LM calls run at once (``max_parallel``):

* ``fake`` — an instant scripted model inside flare: the serving layer alone;
* ``fake-http[@N]`` — flare's OpenAI backend against :mod:`flare.testing.fake_openai`, a server
  with a fixed delay per token and unlimited slots: flare's own scaling (default N=8);
* ``llama-server:MODEL[@N]`` — flare's OpenAI backend against llama.cpp's C++ server with N
  parallel slots (xllamacpp's build, in its own process; MODEL is smollm2, gemma3 or a path);
* anything else — a model spec for flare itself, e.g. ``gemma3`` (in-process llama.cpp, one call
  at a time) or ``xllamacpp:gemma3@4`` (llama.cpp's server engine in flare's process, 4 slots).
"""

from __future__ import annotations

import argparse
import signal
import threading
from dataclasses import dataclass
from pathlib import Path

from flare.lm.base import LanguageModel

KEY = "sk-bench-0123456789abcdefghij"


@dataclass(frozen=True)
class LmSpec:
    """One ``--lm`` value: what runs the model and how many calls it takes at once."""

    text: str
    kind: str  # fake, fake-http, llama-server, flare
    model: str
    parallel: int | None

    @property
    def server(self) -> str | None:
        """Which model server must run beside flare: ``fake``, ``llama`` or None."""
        return {"fake-http": "fake", "llama-server": "llama"}.get(self.kind)


def parse_lm(text: str) -> LmSpec:
    spec, _, n = text.partition("@")
    parallel = int(n) if n else None
    if parallel is not None and parallel < 1:
        raise ValueError(f"{text}: the number after @ must be at least 1")
    if spec in ("fake", "fake-http"):
        return LmSpec(text, spec, "", parallel)
    if spec.startswith("llama-server:"):
        return LmSpec(text, "llama-server", spec.removeprefix("llama-server:"), parallel)
    return LmSpec(text, "flare", spec, parallel)


def model_path(name: str) -> Path:
    from flare.lm.registry import default_model_path, gemma3_model_path

    return {"smollm2": default_model_path, "gemma3": gemma3_model_path}.get(name, lambda: Path(name))()


def run_fake(port: int, token_delay: float) -> None:
    import uvicorn

    from flare.testing.fake_openai import create_fake_app

    uvicorn.run(create_fake_app(token_delay), host="127.0.0.1", port=port, log_level="warning", access_log=False)


def run_llama(model: str, slots: int, port: int, threads: int, n_ctx: int) -> None:
    """llama.cpp's server (xllamacpp) on ``port`` with ``slots`` parallel slots, until SIGTERM."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model_path(model))
    params.n_parallel = slots
    params.n_ctx = n_ctx * slots
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
    params.flash_attn_type = xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
    params.no_extra_bufts = True  # AMX kernels die with SIGILL on hosts that forbid them
    params.swa_full = True
    params.port = port
    params.endpoint_metrics = True
    params.verbosity = -1
    server = xllamacpp.Server(params)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    del server


def run_flare(args: argparse.Namespace) -> None:
    """The flare server under test, with the model ``args.lm`` names."""
    import uvicorn

    from flare.config import Settings
    from flare.engine.loop import Flare
    from flare.retrieve.tantivy_index import TantivyRetriever
    from flare.server import KeyStore, Limits, create_app
    from flare.server.logs import configure

    lm = build_lm(parse_lm(args.lm), args.lm_url, args.threads)
    settings = Settings(max_sentences=args.max_sentences, max_seconds=args.max_seconds)
    engine = Flare(lm, TantivyRetriever(args.index), settings)
    keys = KeyStore.from_config({"keys": [{"key": KEY, "principal": "bench", "groups": ["staff"]}]})
    limits = Limits(max_concurrency=args.max_concurrency, max_sentences=args.max_sentences,
                    max_seconds=args.max_seconds)  # fmt: skip
    configure("warning")
    uvicorn.run(create_app(engine, keys, limits), host="127.0.0.1", port=args.port, log_level="warning",
                access_log=False)  # fmt: skip


def build_lm(spec: LmSpec, url: str | None, threads: int | None) -> LanguageModel:
    from flare.lm.gguf import read_metadata_string
    from flare.lm.openai_http import DEFAULT_EXTRA, OpenAIHTTPModel
    from flare.lm.registry import resolve_model
    from flare.testing.scripted import ScriptedLM

    if spec.kind == "fake":
        reply = ScriptedLM.sentence(" Travel expenses are reimbursed within ten working days. And")
        return ScriptedLM([(lambda p: True, reply)], name="fake")
    if spec.kind in ("fake-http", "llama-server"):
        assert url is not None
        parallel = spec.parallel or (8 if spec.kind == "fake-http" else 4)
        # llama.cpp's server: timings in every streamed chunk give the prompt tokens it evaluated
        extra = {**DEFAULT_EXTRA, "timings_per_token": True} if spec.kind == "llama-server" else None
        # the file's own template: the server reports ChatML for a model without one (Gemma 3)
        template = read_metadata_string(model_path(spec.model), "tokenizer.chat_template") if extra else None
        return OpenAIHTTPModel(url, spec.model or "fake", max_parallel=parallel, logprobs=True, extra=extra,
                               name=spec.text, chat_template=template)  # fmt: skip
    options: dict[str, object] = {"n_threads": threads}
    if spec.parallel is not None:
        options["max_parallel"] = spec.parallel
    return resolve_model(spec.model, **options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=["flare", "fake", "llama"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--lm", default="fake")
    parser.add_argument("--lm-url", default=None)
    parser.add_argument("--index", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--max-sentences", type=int, default=2)
    parser.add_argument("--max-seconds", type=float, default=3600.0)
    parser.add_argument("--max-concurrency", type=int, default=16)
    parser.add_argument("--token-delay", type=float, default=0.02)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--n-ctx", type=int, default=4096)
    args = parser.parse_args()
    if args.role == "fake":
        run_fake(args.port, args.token_delay)
    elif args.role == "llama":
        run_llama(args.lm, args.slots, args.port, args.threads or 1, args.n_ctx)
    else:
        run_flare(args)


if __name__ == "__main__":
    main()
