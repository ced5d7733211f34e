"""Calibrate the support checker against the evaluation world's ground truth (issue 9).

For every committed sentence of ``flare eval`` runs on the world (run with ``verify=flag`` or any
mode that records the checker's evidence), the world says whether the passages the sentence was
checked against really support it (exact, from which passage states which fact), and the checker
is re-run on the same sentence and passages with the evidence lift recorded in the trace. Over a
grid of thresholds this prints how well "fails the checker" finds "unsupported in truth":
precision, recall and F1 of the flag, for the lexical signal alone and with the evidence lift.

Usage::

    python docs/results/verify/calibrate.py docs/results/world/data/world RUN/results.jsonl [...]
        [--split dev|test] [--thresholds supported=0.75,unsupported=0.34,lift=2]

With ``--thresholds`` only that setting is scored (for the held-out report); otherwise the grid
is printed, best F1 first, and the rule stated in ``PROTOCOL.md`` picks the setting.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path

from flare.evaluate.harness import read_results
from flare.evaluate.world import load_world
from flare.evaluate.world.truth import Judge
from flare.types import Passage
from flare.verify.support import Thresholds, check, claims, decide

SUPPORTED = (0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0)
LIFTS = (math.inf, 1.0, 2.0, 3.0, 4.0)  # inf: the lexical signal alone


@dataclass(frozen=True, slots=True)
class Case:
    sentence: str
    truth: str  # supported / unsupported (no-claims sentences are left out)
    details: tuple[tuple[str, str, bool, float | None], ...]
    colocate: bool  # the checker options the details were computed with
    relation: bool


def cases(world_dir: Path, paths: list[Path], split: str | None) -> list[Case]:
    world = load_world(world_dir)
    judge = Judge(world)
    corpus = {p.id: Passage(p.id, p.text, p.title) for p in _corpus(world_dir)}
    splits = {q.id: q.split for q in world.questions}
    out: list[Case] = []
    for path in paths:
        for rec in read_results(path):
            if rec["dataset"] != world_dir.name or rec.get("error") or not rec.get("trace"):
                continue
            if split and splits.get(rec["id"]) != split:
                continue
            steps = [s for s in rec["trace"]["steps"]
                     if s.get("sentence") and s.get("support", "unchecked") != "unchecked"]  # fmt: skip
            verdict = judge.judge(rec["id"], [(s["sentence"], s.get("evidence", [])) for s in steps])
            context = [rec["question"]]
            for step, sv in zip(steps, verdict.sentences, strict=True):
                context.append(step["sentence"])
                if sv.status == "no_claims" or not step.get("evidence"):
                    continue
                passages = [corpus[i] for i in step["evidence"] if i in corpus]
                lifts: list[float | None] | None = [c[3] for c in step.get("claims", [])]
                if not any(x is not None for x in lifts or []) or len(lifts or []) != len(claims(step["sentence"])):
                    lifts = None  # no lift recorded, or claims recorded for another sentence (a bug fixed in 2026-12)
                for co, rel in itertools.product((True, False), repeat=2):
                    th = Thresholds(colocate=co, relation=rel)
                    support = check(step["sentence"], passages, lift=lifts, context=context[:-1], thresholds=th)
                    if support.details:
                        out.append(Case(step["sentence"], sv.status, support.details, co, rel))
    return out


def _corpus(world_dir: Path) -> list[Passage]:
    with (world_dir / "corpus.jsonl").open(encoding="utf-8") as fh:
        return [Passage(r["id"], r["text"], r.get("title", "")) for r in map(json.loads, fh)]


def score(cs: list[Case], th: Thresholds) -> tuple[float, float, float, int, int]:
    """Precision, recall, F1 of flagging (the checker fails the sentence) for truth-unsupported."""
    tp = fp = fn = 0
    cs = [c for c in cs if (c.colocate, c.relation) == (th.colocate, th.relation)]
    for c in cs:
        flagged = decide(c.details, th)[0] != "supported"
        bad = c.truth == "unsupported"
        tp += flagged and bad
        fp += flagged and not bad
        fn += bad and not flagged
    p = tp / (tp + fp) if tp + fp else math.nan
    r = tp / (tp + fn) if tp + fn else math.nan
    f1 = 2 * p * r / (p + r) if p + r and not math.isnan(p + r) else math.nan
    return p, r, f1, tp + fn, len(cs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("world", type=Path)
    ap.add_argument("results", type=Path, nargs="+")
    ap.add_argument("--split", choices=("dev", "test"), default=None)
    ap.add_argument("--thresholds", default=None, help="e.g. supported=0.75,unsupported=0.34,lift=2")
    args = ap.parse_args()
    cs = cases(args.world, args.results, args.split)
    base = [c for c in cs if c.colocate and c.relation]
    bad = sum(c.truth == "unsupported" for c in base)
    print(f"{len(base)} claim-bearing sentences, {bad} unsupported in truth ({bad / max(len(base), 1):.3f})")
    if args.thresholds:
        given = dict(kv.split("=") for kv in args.thresholds.split(","))
        th = Thresholds(**{k: (v.lower() == "true" if k in ("colocate", "relation") else float(v))
                           for k, v in given.items()})  # type: ignore[arg-type]
        p, r, f1, _, _ = score(cs, th)
        print(f"{th}: precision {p:.3f} recall {r:.3f} F1 {f1:.3f}")
        return
    rows = []
    for sup, lift, co, rel in itertools.product(SUPPORTED, LIFTS, (True, False), (True, False)):
        th = Thresholds(supported=sup, unsupported=min(0.34, sup), lift=lift, colocate=co, relation=rel)
        rows.append((score(cs, th), th))
    print("| supported ≥ | lift ≥ (nats) | subject co-located | relation word | precision | recall | F1 |")
    print("|---|---|---|---|---|---|---|")
    for (p, r, f1, _, _), th in sorted(rows, key=lambda x: -(x[0][2] if not math.isnan(x[0][2]) else -1)):
        shown = "off (lexical only)" if math.isinf(th.lift) else f"{th.lift:g}"
        print(f"| {th.supported:g} | {shown} | {th.colocate} | {th.relation} | {p:.3f} | {r:.3f} | {f1:.3f} |")


if __name__ == "__main__":
    main()
