"""Which bundled model should be the default? FLARE on a dev slice, both models, side by side.

Dev slice: the first N questions of 2WikiMultihopQA and NQ-open (the evaluation issue reports on
the rest). Prints token-F1 / EM against all answer aliases, retrieval rate and seconds per
answer for each model, and the ratio between them.

    .venv/bin/python benchmarks/pick_default_model.py --n 8
"""

from __future__ import annotations

import argparse
import json
import re
import string
import time
from collections import Counter
from pathlib import Path

from flare.config import Settings
from flare.engine.loop import Flare
from flare.errors import FlareError
from flare.evaluate.datasets import dataset_dir
from flare.lm.llama import LlamaCppModel, default_model_path, gemma3_model_path
from flare.retrieve.corpus import load_corpus
from flare.retrieve.tantivy_index import TantivyRetriever, build_index


def normalise(text: str) -> str:
    text = text.lower()
    text = "".join(c for c in text if c not in string.punctuation)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def f1(prediction: str, gold: str) -> float:
    p, g = normalise(prediction).split(), normalise(gold).split()
    common = sum((Counter(p) & Counter(g)).values())
    if not common:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def contains(prediction: str, gold: str) -> bool:
    return normalise(gold) in normalise(prediction)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--datasets", default="2wikimultihopqa,nq_open")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    models = {"gemma3": gemma3_model_path(), "smollm2": default_model_path()}
    results: dict[str, dict[str, float]] = {}
    for name, path in models.items():
        lm = LlamaCppModel(path, n_threads=args.threads)
        hits = f1s = seconds = retrieved = sentences = n = 0.0
        for ds in args.datasets.split(","):
            index = Path(".flare/indexes") / ds
            if not (index / "flare-index.json").exists():
                build_index(load_corpus(dataset_dir(ds) / "corpus.jsonl"), index)
            engine = Flare(lm, TantivyRetriever(index), Settings(max_sentences=4))
            lines = (dataset_dir(ds) / "questions.jsonl").read_text(encoding="utf-8").splitlines()
            for line in lines[: args.n]:
                q = json.loads(line)
                t0 = time.perf_counter()
                answer = engine.answer(q["question"])
                seconds += time.perf_counter() - t0
                hits += max(contains(answer.text, a) for a in q["answers"])
                f1s += max(f1(answer.text, a) for a in q["answers"])
                retrieved += sum(s.retrieved for s in answer.sentences)
                sentences += len(answer.sentences)
                n += 1
                print(f"  {name} {ds} {q['id']}: {answer.text[:80]!r} gold={q['answers'][0]!r}", flush=True)
        results[name] = {
            "answer_recall": hits / n,
            "f1": f1s / n,
            "retrieval_rate": retrieved / max(sentences, 1),
            "seconds_per_answer": seconds / n,
        }
        print(name, json.dumps({k: round(v, 3) for k, v in results[name].items()}), flush=True)
    a, b = results["gemma3"], results["smollm2"]
    print("gemma3 / smollm2:", {k: round(a[k] / b[k], 2) if b[k] else None for k in a})


if __name__ == "__main__":
    try:
        main()
    except FlareError as err:  # e.g. no dataset: one line with the hint, no traceback
        raise SystemExit(f"error: {err}") from None
