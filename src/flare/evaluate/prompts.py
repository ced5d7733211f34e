"""Few-shot prompts for evaluation, loaded from package data into engine templates.

Each ``flare/data/prompts/<name>.json`` holds an instruction and exemplars written for flare:
chain of thought ending "So the answer is …" for multi-hop and factoid questions, yes/no for
StrategyQA, a paragraph covering every reading for ASQA. Every exemplar has its search results,
its answer, and the same answer annotated two more ways: with self-ask ``Follow up:`` questions
(for ``decompose``) and with ``[Search(query)]`` tags (for ``instruct``). So every method sees the
same instruction, the same exemplar questions, documents and answers; only the retrieval
annotations that ``decompose`` and ``instruct`` need are added to theirs (M9).

Example::

    from flare.evaluate.prompts import template_for
    t = template_for("2wikimultihopqa", layout="chatml", style="answer")
    prompt = t.render([], "Who directed Jaws?", "")
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from flare.engine.methods import PromptStyle, prompt_style
from flare.engine.prompts import Layout, PromptTemplate
from flare.errors import ConfigError
from flare.types import Passage

Style = PromptStyle

# Which exemplar set each bundled dataset uses; other datasets get the multi-hop set.
DATASET_PROMPTS: dict[str, str] = {
    "2wikimultihopqa": "multihop",
    "hotpotqa": "multihop",
    "musique": "multihop",
    "strategyqa": "strategyqa",
    "asqa": "asqa",
    "nq_open": "short",
    "world": "asqa",  # the fictional long-form world (flare.evaluate.world): paragraph answers, as ASQA
}
PROMPT_SETS = ("asqa", "multihop", "short", "strategyqa")



@dataclass(frozen=True, slots=True)
class Exemplar:
    """One worked example: question, its documents, and the answer in each annotation style."""

    question: str
    docs: tuple[Passage, ...]
    answers: dict[str, str]  # style -> answer text


@dataclass(frozen=True, slots=True)
class PromptSet:
    """An instruction and its exemplars, as stored in ``data/prompts/<name>.json``."""

    name: str
    instruction: str
    extra: dict[str, str]  # style -> sentence added to the instruction
    exemplars: tuple[Exemplar, ...]


@cache
def load_prompt_set(name: str) -> PromptSet:
    """Read a bundled prompt set by name (``multihop``, ``strategyqa``, ``asqa``, ``short``)."""
    if name not in PROMPT_SETS:
        raise ConfigError(f"no prompt set named {name!r}", f"choose one of: {', '.join(PROMPT_SETS)}")
    raw: dict[str, Any] = json.loads(
        resources.files("flare").joinpath(f"data/prompts/{name}.json").read_text(encoding="utf-8")
    )
    exemplars = tuple(
        Exemplar(
            question=e["question"],
            docs=tuple(Passage(id=t, title=t, text=x) for t, x in e["docs"]),
            answers={"answer": e["answer"], "decompose": e["decompose"], "instruct": e["instruct"]},
        )
        for e in raw["exemplars"]
    )
    extra = {"answer": "", "decompose": raw["decompose_instruction"], "instruct": raw["instruct_instruction"]}
    return PromptSet(raw["name"], raw["instruction"], extra, exemplars)


# The set for a dataset not named above, by how its answers are scored: a second fictional world
# (``world-s1``) writes paragraphs as ``world`` does, its bridge questions short answers.
TASK_PROMPTS: dict[str, str] = {"long": "asqa", "yesno": "strategyqa"}


def prompt_set_for(dataset: str, task: str | None = None) -> str:
    """The exemplar set a dataset uses: by its folder name, else by its ``task``, else multi-hop."""
    return DATASET_PROMPTS.get(dataset) or TASK_PROMPTS.get(task or "", "multihop")


def template_for(dataset: str, *, task: str | None = None, layout: Layout = "chatml",
                 style: Style = "answer") -> PromptTemplate:  # fmt: skip
    """The engine template for ``dataset`` (scored as ``task``) in ``layout``, exemplars annotated for ``style``."""
    ps = load_prompt_set(prompt_set_for(dataset, task))
    instruction = f"{ps.instruction} {ps.extra[style]}".strip()
    return PromptTemplate.build(layout, instruction, [(ex.docs, ex.question, ex.answers[style]) for ex in ps.exemplars])


def style_for(method: str) -> Style:
    """The exemplar annotation a method needs (from the method table): follow-ups, search tags, or plain answers."""
    return prompt_style(method)
