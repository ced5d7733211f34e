"""A served SmolLM2 through ``openai:``: the plain layout against ChatML, side by side (part of issue 12).

Starts llama.cpp's own server (``llama-server`` from the xllamacpp wheel, ``tests/lm_http/llama_server.py``)
on the bundled SmolLM2 behind a loopback proxy that hides ``/props``, so the server reports no chat
template, as llama-cpp-python's server, vLLM and OpenAI do. Asks the handbook questions through the
engine with ``layout=plain`` and ``layout=chatml``, then with ``layout=auto`` straight to the server
(which reports its template), and prints the share of expected facts each answer states and how
many answers were empty or one sentence.

Usage: ``python benchmarks/bench_served_layout.py [--threads 1]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from importlib.resources import files
from pathlib import Path

from flare import Filters, Flare, Settings, build_retriever, load_corpus, open_retriever
from flare.config import Layout
from flare.lm.llama import default_model_path
from flare.lm.openai_http import OpenAIHTTPModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.lm_http.llama_server import llama_server
from tests.loopback_proxy import Proxy

QUESTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("Who founded Northwind Labs, and who leads it now?", ("ingrid solberg", "tomas berg")),
    ("How long does Northwind Labs take to reimburse travel expenses in 2026?", ("ten working days",)),
    ("What does the Floe sensor measure, and how often does it send readings?", ("sea ice thickness", "every hour")),
    ("When and where was Northwind Labs founded?", ("2011", "tromsø")),
    ("How long does one Floe battery last?", ("three years",)),
    ("北风实验室的差旅费用多久报销？", ("十个工作日",)),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    handbook = Path(str(files("flare") / "data" / "examples" / "handbook.jsonl"))
    with (
        tempfile.TemporaryDirectory() as tmp,
        llama_server(default_model_path(), threads=args.threads) as url,
        Proxy(url.removesuffix("/v1"), hide=("/props",)) as proxy,
    ):
        build_retriever(str(Path(tmp) / "idx"), load_corpus(handbook), progress=False)
        retriever = open_retriever(str(Path(tmp) / "idx"))
        silent, direct = OpenAIHTTPModel(proxy.url, timeout=600), OpenAIHTTPModel(url, timeout=600)
        print(f"behind the proxy the server reports a chat template: {silent.chat_template is not None}")
        print(f"without it: {direct.chat_template is not None}")
        rows: list[tuple[str, float, int, float]] = []
        runs: list[tuple[Layout, OpenAIHTTPModel]] = [("plain", silent), ("chatml", silent), ("auto", direct)]
        for layout, lm in runs:
            settings = Settings(layout=layout, max_sentences=4, max_output_tokens=128)
            engine = Flare(lm, retriever, settings)
            name = f"{layout} ({engine.template_for(settings).name})"
            found = total = short = 0
            t0 = time.perf_counter()
            for question, facts in QUESTIONS:
                answer = engine.answer(question, filters=Filters.any_of("acl", ["staff"]))
                text = answer.text.lower()
                found += sum(f in text for f in facts)
                total += len(facts)
                short += len(answer.sentences) <= 1
            rows.append((name, found / total, short, time.perf_counter() - t0))
        print(f"{'layout':15} {'fact recall':>11} {'answers of <=1 sentence':>24} {'seconds':>8}")
        for name, recall, short, secs in rows:
            print(f"{name:15} {recall:11.3f} {short:>17d} of {len(QUESTIONS)} {secs:8.1f}")
        print(f"chatml / plain fact recall: {rows[1][1] / rows[0][1]:.2f}x" if rows[0][1] else "plain recall is 0")


if __name__ == "__main__":
    main()
