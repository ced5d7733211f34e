"""Apply PROTOCOL.md's rule for the default verify mode and trigger to the development runs.

Among the candidates, keep those whose world fact recall is at least 0.9 × today's default's and
whose ASQA STR-EM is at least 0.9 × today's (each on the questions both answered), then pick the
lowest world-truth cited-but-unsupported share; ties go to fewer LM calls per answer.

Usage::

    python docs/results/verify/choose_default.py --today flare --world-today W0.jsonl --asqa-today A0.jsonl \
        --world W.jsonl [...] --asqa A.jsonl [...]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from analyse import WORLD, corpus_of, rescore  # noqa: E402

from flare.evaluate.harness import read_results
from flare.evaluate.world import load_world
from flare.evaluate.world.truth import Judge

CANDIDATES = [f"flare:{t}verify={m}" for t in ("", "trigger=support,")
              for m in ("flag", "drop", "retry", "retry,retry_then=drop")]  # fmt: skip


def by_method(paths: list[Path], world: bool, only: str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    corpus = corpus_of("world" if world else "asqa")
    judge = Judge(load_world(WORLD)) if world else None
    out: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for path in paths:
        for r in read_results(path):
            if only is None or r["method"] == only:
                rescore(r, corpus, judge)
                out[r["method"]][r["id"]] = r
    return out


def ratio(cand: dict[str, dict[str, Any]], base: dict[str, dict[str, Any]], key: str) -> tuple[float, int]:
    ids = sorted(set(cand) & set(base))
    c = sum(cand[i]["scores"].get(key) or 0.0 for i in ids)
    b = sum(base[i]["scores"].get(key) or 0.0 for i in ids)
    return (c / b if b else float("nan")), len(ids)


def mean(rs: dict[str, dict[str, Any]], key: str) -> float:
    xs = [r["scores"][key] if key in r["scores"] else r.get(key) for r in rs.values()]
    vals = [float(x) for x in xs if x is not None]
    return sum(vals) / len(vals) if vals else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--today", required=True, help="label of today's default in the --*-today files")
    ap.add_argument("--world-today", type=Path, nargs="+", required=True)
    ap.add_argument("--asqa-today", type=Path, nargs="+", required=True)
    ap.add_argument("--world", type=Path, nargs="+", required=True, help="the candidates' world runs")
    ap.add_argument("--asqa", type=Path, nargs="+", required=True, help="the candidates' ASQA runs")
    args = ap.parse_args()
    world, asqa = by_method(args.world, True), by_method(args.asqa, False)
    world[args.today] = by_method(args.world_today, True, args.today)[args.today]
    asqa[args.today] = by_method(args.asqa_today, False, args.today)[args.today]
    rows = []
    print("| candidate | world n | fact recall ÷ today | cited & unsupported (truth) | ASQA n | STR-EM ÷ today "
          "| LM calls | eligible |\n|---|---|---|---|---|---|---|---|")
    for cand in CANDIDATES:
        if cand not in world or cand not in asqa:
            continue
        fr, nw = ratio(world[cand], world[args.today], "truth_fact_recall")
        em, na = ratio(asqa[cand], asqa[args.today], "quality")
        cu = mean(world[cand], "truth_cited_unsupported")
        calls = mean(world[cand], "lm_calls")
        ok = fr >= 0.9 and em >= 0.9
        rows.append((not ok, cu, calls, cand))
        print(f"| {cand} | {nw} | {fr:.3f} | {cu:.3f} | {na} | {em:.3f} | {calls:.2f} | {'yes' if ok else 'no'} |")
    today_cu = mean(world[args.today], "truth_cited_unsupported")
    print(f"\ntoday's default ({args.today}): cited & unsupported (truth) {today_cu:.3f}")
    eligible = sorted(r for r in rows if not r[0])
    print(f"chosen: {eligible[0][3]}" if eligible else "no candidate meets the recall and STR-EM floors")


if __name__ == "__main__":
    main()
