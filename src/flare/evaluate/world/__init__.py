"""The fictional evaluation world: generate it, write it as a dataset folder, read it back.

The folder has the format of the bundled datasets, so ``flare eval --dataset DIR`` runs it:

* ``questions.jsonl`` — ``id``, ``question``, ``answers`` (the gold fact values), ``type``,
  ``split`` (dev questions first, then test), ``supporting_ids`` / ``supporting_titles``,
  ``facts`` (each gold fact with its value's aliases, its passages and whether it belongs to a
  bridge entity), ``qa_pairs`` (one short question per gold fact, so the long-form STR-EM
  applies) and ``reference`` (a plain answer stating every gold fact);
* ``corpus.jsonl`` — ``id``, ``title``, ``text``, ``meta.year``;
* ``truth.jsonl`` — the ground truth the corpus text never shows: every entity with its
  aliases, every fact with the passages that state it, every passage with its facts and the
  entities it names, and the vocabulary of names and numbers (see :mod:`~flare.evaluate.world.truth`).

Usage::

    python -m flare.evaluate.world --out docs/results/world/data/world --seed 0 --questions 160 --dev 40

or from Python: ``write_world(generate(seed=0), Path("out"))``. The folder is written to a
temporary path and renamed into place, so a failed run leaves nothing half written.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from flare.errors import InputError
from flare.evaluate.world.gen import WORLD_VERSION, Builder, Entity, Fact, World, WorldPassage, WorldQuestion
from flare.evaluate.world.questions import BRIDGE_KINDS, KINDS, QuestionMaker

if TYPE_CHECKING:
    from flare.retrieve.base import Retriever

MAX_QUESTIONS = 2000
QUESTION_KINDS = ("long", "bridge")


def generate(*, seed: int = 0, questions: int = 160, dev: int = 40, kind: str = "long") -> World:
    """The world for ``seed`` with ``questions`` questions, the first ``dev`` of them dev, the rest test.

    The world grows with the number of questions (about one company, founder and product per two
    questions), so every question has a head entity of its own. ``kind="bridge"`` asks short
    two-hop questions with one answer each (:data:`~flare.evaluate.world.questions.BRIDGE_KINDS`)
    instead of long-form ones, about the same world: the same ``seed`` and ``questions`` give the
    same corpus and truth either way.
    """
    if kind not in QUESTION_KINDS:
        raise ValueError(f"kind must be one of {', '.join(QUESTION_KINDS)}, got {kind!r}")
    if not 1 <= questions <= MAX_QUESTIONS or not 0 <= dev < questions:
        raise ValueError(f"need 1 <= questions <= {MAX_QUESTIONS} and 0 <= dev < questions, "
                         f"got questions={questions}, dev={dev}")
    rng = random.Random(seed)
    b = Builder(rng)
    b.populate(questions // 2 + 5)
    passages = b.write_passages()
    stated: dict[str, list[str]] = {}
    for p in passages.values():
        for fid in p.fact_ids:
            stated.setdefault(fid, []).append(p.id)
    facts = {f.id: replace(f, passage_ids=tuple(stated.get(f.id, ()))) for f in b.facts}
    world = World(seed, {e.id: e for e in b.entities}, facts, passages, ())
    qs = QuestionMaker(world, rng).choose(questions, dev, BRIDGE_KINDS if kind == "bridge" else KINDS)
    return World(seed, world.entities, facts, passages, qs)


def question_records(world: World) -> list[dict[str, Any]]:
    """One ``questions.jsonl`` record per question."""
    out = []
    for q in world.questions:
        facts = [world.facts[f] for f in q.fact_ids]
        support = list(dict.fromkeys(p for f in facts for p in f.passage_ids))
        short = q.type in BRIDGE_KINDS  # one answer, scored by exact match like the multi-hop sets
        out.append({
            "id": q.id, "question": q.question,
            "answers": list(world.aliases(facts[0])) if short else [world.value_text(f) for f in facts],
            "type": q.type, "split": q.split, "supporting_ids": support,
            "supporting_titles": [world.passages[p].title for p in support],
            "head": q.head,
            "facts": [{"id": f.id, "subject": f.subject, "subject_name": world.entities[f.subject].name,
                       "relation": f.relation, "value": world.value_text(f), "aliases": list(world.aliases(f)),
                       "passage_ids": list(f.passage_ids), "bridge": world.is_bridge(q.head, f)} for f in facts],
            "qa_pairs": [] if short else [{"question": s, "short_answers": list(world.aliases(f))}
                                          for s, f in zip(q.sub_questions, facts, strict=True)],
            "reference": " ".join(q.reference),
        })
    return out


def bridge_misses(world: World, retriever: Retriever, *, k: int) -> tuple[float, float]:
    """How often a search with the question alone misses the bridge: (share of questions that
    miss at least one bridge fact's passages in the top ``k``, share of bridge facts missed)."""
    q_miss, facts, f_miss = 0, 0, 0
    for q in world.questions:
        top = {h.passage.id.split("#", 1)[0] for h in retriever.search(q.question, k=k)}
        missed = [not (set(world.facts[f].passage_ids) & top) for f in q.fact_ids
                  if world.is_bridge(q.head, world.facts[f])]
        q_miss += any(missed)
        facts += len(missed)
        f_miss += sum(missed)
    return q_miss / len(world.questions), f_miss / max(facts, 1)


def truth_records(world: World, *, dev: int) -> list[dict[str, Any]]:
    """The ``truth.jsonl`` records: a header, entities, facts, passages, then the vocabulary."""
    rows: list[dict[str, Any]] = [{
        "type": "world", "version": WORLD_VERSION, "seed": world.seed, "questions": len(world.questions),
        "dev": dev, "entities": len(world.entities), "facts": len(world.facts), "passages": len(world.passages),
    }]
    rows += [{"type": "entity", "id": e.id, "kind": e.kind, "name": e.name, "aliases": list(e.aliases),
              "pronoun": e.pronoun, "noun": e.noun, "twin_of": e.twin_of} for e in world.entities.values()]
    rows += [{"type": "fact", "id": f.id, "subject": f.subject, "relation": f.relation, "value": f.value,
              "kind": f.kind, "as_of": f.as_of, "value_text": world.value_text(f), "passage_ids": list(f.passage_ids)}
             for f in world.facts.values()]
    rows += [{"type": "passage", "id": p.id, "subject": p.subject, "year": p.year, "fact_ids": list(p.fact_ids),
              "entities": list(p.entities)} for p in world.passages.values()]
    names = sorted({a for e in world.entities.values() for a in e.aliases})
    numbers = sorted({int(f.value) for f in world.facts.values() if f.kind != "entity"}
                     | {f.as_of for f in world.facts.values() if f.as_of is not None})
    rows.append({"type": "vocabulary", "names": names, "numbers": numbers})
    return rows


def write_world(world: World, out: Path, *, force: bool = False) -> Path:
    """Write the dataset folder ``out`` atomically; an existing folder is replaced only with ``force``."""
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} is a file, not a folder; choose another --out")
    if out.exists() and any(out.iterdir()) and not force:
        raise FileExistsError(f"{out} already exists and is not empty; pass --force to replace it")
    dev = sum(1 for q in world.questions if q.split == "dev")
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        corpus = [{"id": p.id, "title": p.title, "text": p.text, "meta": {"year": p.year}}
                  for p in world.passages.values()]
        _jsonl(tmp / "corpus.jsonl", corpus)
        _jsonl(tmp / "questions.jsonl", question_records(world))
        _jsonl(tmp / "truth.jsonl", truth_records(world, dev=dev))
        (tmp / "README.md").write_text(_readme(world, dev), encoding="utf-8")
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        if out.exists():
            out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def _readme(world: World, dev: int) -> str:
    n = len(world.questions)
    old = sum(1 for f in world.facts.values() if not f.current)
    twins = sum(1 for e in world.entities.values() if e.twin_of)
    bridge = bool(world.questions) and all(q.type in BRIDGE_KINDS for q in world.questions)
    return (
        f"# A fictional world for {'two-hop' if bridge else 'long-form'} evaluation (generated; do not edit)\n\n"
        f"`python -m flare.evaluate.world --out DIR --seed {world.seed} --questions {n} --dev {dev}"
        f"{' --kind bridge' if bridge else ''}`\n\n"
        f"- {n} questions: {dev} dev (first in the file), {n - dev} test; "
        f"{len(world.passages)} passages; {len(world.entities)} entities ({twins} near-miss twins); "
        f"{len(world.facts)} facts ({old} older figures in passages dated by `meta.year`).\n"
        "- `truth.jsonl` holds which passage states which fact; see docs/results/world/README.md.\n"
    )


def load_world(folder: Path) -> World:
    """Read a world written by :func:`flare.evaluate.world.write_world` back from its folder."""
    folder = Path(folder)
    paths = [folder / n for n in ("truth.jsonl", "corpus.jsonl", "questions.jsonl")]
    missing = [p.name for p in paths if not p.exists()]
    if missing:
        raise InputError(f"{folder} is not a world folder (missing {', '.join(missing)})",
                         "generate one with: python -m flare.evaluate.world --out DIR")
    rows = _read(paths[0])
    texts = {r["id"]: r for r in _read(paths[1])}
    head = rows[0] if rows and rows[0].get("type") == "world" else {}
    entities = {r["id"]: Entity(r["id"], r["kind"], r["name"], tuple(r["aliases"]), r["pronoun"], r["noun"],
                                r["twin_of"]) for r in rows if r["type"] == "entity"}
    facts = {r["id"]: Fact(r["id"], r["subject"], r["relation"], r["value"], r["kind"], r["as_of"],
                           tuple(r["passage_ids"])) for r in rows if r["type"] == "fact"}
    passages = {r["id"]: WorldPassage(r["id"], texts[r["id"]]["title"], texts[r["id"]]["text"], r["year"],
                                      r["subject"], tuple(r["fact_ids"]), tuple(r["entities"]))
                for r in rows if r["type"] == "passage"}
    questions = tuple(WorldQuestion(r["id"], r["question"], r["type"], r["split"], r["head"],
                                    tuple(f["id"] for f in r["facts"]),
                                    tuple(p["question"] for p in r["qa_pairs"]) or (r["question"],),
                                    tuple(_split_reference(r["reference"], len(r["facts"]))))
                      for r in _read(paths[2]))
    return World(int(head.get("seed", 0)), entities, facts, passages, questions)


def _split_reference(text: str, n: int) -> list[str]:
    parts = re.split(r"(?<=\.) (?=[A-Z])", text)
    return parts if len(parts) == n else [text]


def _read(path: Path) -> list[dict[str, Any]]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise InputError(f"{path}:{n}: not JSON ({exc.msg})", "regenerate the world folder") from exc
    return out


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see --help)\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m flare.evaluate.world", description="Write the fictional evaluation world.")
    parser.add_argument("--out", type=Path, required=True, help="dataset folder to write")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--questions", type=int, default=160, help="number of questions (default 160)")
    parser.add_argument("--dev", type=int, default=40, help="how many of them form the dev split (default 40)")
    parser.add_argument("--kind", choices=QUESTION_KINDS, default="long",
                        help="long-form questions (default) or short two-hop bridge questions")  # fmt: skip
    parser.add_argument("--force", action="store_true", help="replace an existing folder")
    args = parser.parse_args(argv)
    try:
        world = generate(seed=args.seed, questions=args.questions, dev=args.dev, kind=args.kind)
        write_world(world, args.out, force=args.force)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {len(world.questions)} questions and {len(world.passages)} passages to {args.out}", file=sys.stderr)
    return 0

