"""A served SmolLM2 through ``openai:``: the plain layout against ChatML, side by side (part of issue 12).

Starts ``llama_cpp.server`` (which reports no chat template) on the bundled SmolLM2, asks the
handbook questions through the engine with ``layout=plain`` and ``layout=chatml``, and prints the
share of expected facts each answer states and how many answers were empty or one sentence.

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
from flare.lm.llama import default_model_path
from flare.lm.openai_http import OpenAIHTTPModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.lm_http.llama_server import llama_server

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
    with tempfile.TemporaryDirectory() as tmp, llama_server(default_model_path(), threads=args.threads) as url:
        build_retriever(str(Path(tmp) / "idx"), load_corpus(handbook), progress=False)
        retriever = open_retriever(str(Path(tmp) / "idx"))
        lm = OpenAIHTTPModel(url, timeout=600)
        print(f"server {url} reports chat template: {lm.chat_template is not None}")
        rows: list[tuple[str, float, int, float]] = []
        for layout in ("plain", "chatml"):
            settings = Settings(layout=layout, max_sentences=4, max_output_tokens=128)
            engine = Flare(lm, retriever, settings)
            found = total = short = 0
            t0 = time.perf_counter()
            for question, facts in QUESTIONS:
                answer = engine.answer(question, filters=Filters.any_of("acl", ["staff"]))
                text = answer.text.lower()
                found += sum(f in text for f in facts)
                total += len(facts)
                short += len(answer.sentences) <= 1
            rows.append((layout, found / total, short, time.perf_counter() - t0))
        print(f"{'layout':8} {'fact recall':>11} {'answers of <=1 sentence':>24} {'seconds':>8}")
        for layout, recall, short, secs in rows:
            print(f"{layout:8} {recall:11.3f} {short:>17d} of {len(QUESTIONS)} {secs:8.1f}")
        print(f"chatml / plain fact recall: {rows[1][1] / rows[0][1]:.2f}x" if rows[0][1] else "plain recall is 0")


if __name__ == "__main__":
    main()
