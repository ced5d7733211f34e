"""Run methods over dataset examples, score each answer, and append it to a resumable JSONL (E3).

Every finished example becomes one line of ``results.jsonl`` (written, flushed and fsynced before
the next starts), holding the question, gold answers, prediction, scores, figures and the full
trace. A rerun reads the file and skips every (dataset, method, example) already there, so
Ctrl-C or a crash loses at most the example in flight. Examples run in the outer loop (datasets
taking turns) and methods in the inner one, so a run cut short still compares all methods on the
same questions.

An exception inside one answer does not stop the run: the example is recorded as failed, with
its error, and scored as wrong (every quality score 0) — it is never skipped.

Answer forcing (on by default for short-answer and yes/no tasks): when a method's answer does not
end with "So the answer is …", the harness appends that cue and lets the model finish it, with the
question but no documents, so every method is scored on the same kind of final answer. Small
models often stop after one sentence without the cue; without forcing their scores measure answer
format more than facts. The method's own text (``prediction``), the forced ending (``forced``) and
whether the method wrote the cue itself (``answer_cue``) are all kept; the forcing call is not
counted in ``lm_calls`` or ``seconds`` (it costs the same for every method) but in
``forced_seconds``.

Timing is fair between methods: before every answer the model's prompt caches hold the prompt
header and nothing else (:meth:`~flare.lm.base.ModelBase.reset_cache`), as those of a server that
has answered other questions do, so no method reuses the documents another method's answer to the
same question left there, and none pays for the header.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from flare.config import Settings
from flare.engine.loop import Flare
from flare.engine.prompts import Layout, PromptTemplate, layout_for
from flare.evaluate.citations import citation_scores
from flare.evaluate.datasets import Example, doc_id
from flare.evaluate.facts import score_facts
from flare.evaluate.methods import MethodSpec
from flare.evaluate.metrics import (
    exact_match,
    extract_answer,
    gold_recall,
    normalize,
    rouge_l,
    short_answer_em,
    token_scores,
    yes_no,
)
from flare.evaluate.prompts import style_for, template_for
from flare.lm.base import LanguageModel, declared
from flare.retrieve.base import Retriever
from flare.retrieve.filters import Filters
from flare.trace.tracers import MemoryTracer

Task = Literal["short", "yesno", "long", "facts"]
RESULTS_FILE = "results.jsonl"
FORCE_CUE = " So the answer is"
FORCE_MAX_TOKENS = 16
RECORD_VERSION = "flare.eval/1"

# The paper's per-dataset settings (Table 9) that are not method choices; CLI flags override them.
DATASET_SETTINGS: dict[str, dict[str, Any]] = {
    "strategyqa": {"theta": 0.4},
    "asqa": {"query": "explicit", "keep_first_docs": True},
}


def task_of(dataset: str, examples: Sequence[Example]) -> Task:
    """How answers are scored: ASQA-like long form, yes/no, gold facts under filters, or short answers."""
    if examples and all({"facts", "stale", "secret"} <= e.extra.keys() for e in examples):
        return "facts"  # gold facts with their stale and secret counterparts (benchmarks/qinglan-zh)
    if dataset == "asqa" or (examples and all(e.qa_pairs for e in examples)):
        return "long"
    if dataset == "strategyqa" or (examples and all(normalize(e.answers[0]) in ("yes", "no") for e in examples)):
        return "yesno"
    return "short"


def score(task: Task, example: Example, prediction: str, *, forced: str | None = None) -> dict[str, float | None]:
    """Quality scores of one prediction; ``quality`` is the headline figure of the task.

    ``forced`` is the model's completion of "So the answer is" appended to a prediction that
    lacked the cue: the answer is extracted from it, while ``answer_cue`` still says whether the
    prediction had the cue on its own.
    """
    if task == "facts":
        return score_facts(prediction, example.extra)
    _, cue = extract_answer(prediction)
    extracted, _ = extract_answer(final_text(prediction, forced))
    if task == "long":
        str_em = short_answer_em(prediction, example.qa_pairs)
        return {"quality": str_em, "str_em": str_em, "rouge_l": rouge_l(prediction, example.answers)}
    if task == "yesno":
        acc = float(yes_no(extracted) == normalize(example.answers[0]))
        return {"quality": acc, "accuracy": acc, "answer_cue": float(cue)}
    em = exact_match(extracted, example.answers)
    t = token_scores(extracted, example.answers)
    return {"quality": em, "em": em, "f1": t.f1, "precision": t.precision, "recall": t.recall,
            "answer_cue": float(cue)}


def final_text(prediction: str, forced: str | None) -> str:
    """The text that is scored: the prediction, plus the forced cue and its completion if any."""
    return prediction if forced is None else f"{prediction.strip()}{FORCE_CUE}{forced}"


def force_answer(engine: Flare, question: str, prediction: str) -> str:
    """The model's completion of "So the answer is" after ``prediction`` (question, no documents)."""
    prompt = engine.template.render([], question, f"{prediction.strip()}{FORCE_CUE}")
    return engine.lm.complete(prompt, max_tokens=FORCE_MAX_TOKENS, stop=engine.template.stop).text


def failed_scores(task: Task) -> dict[str, float | None]:
    """The scores of a failed example: wrong on every quality measure."""
    keys = {"long": ("str_em", "rouge_l"), "yesno": ("accuracy", "answer_cue"),
            "short": ("em", "f1", "precision", "recall", "answer_cue"),
            "facts": ("fact_recall", "all_facts")}[task]
    return {"quality": 0.0, **dict.fromkeys(keys, 0.0)}


TruthScores = Callable[[dict[str, Any]], dict[str, float | None]]
"""Ground-truth figures of one finished record (see :func:`flare.evaluate.world.score.truth_scores`)."""


@dataclass(frozen=True, slots=True)
class Job:
    """One dataset to evaluate: its name, task, examples and retriever.

    ``truth``, when the dataset knows which passage states which fact (the evaluation world),
    adds exact support figures to every record's scores, prefixed ``truth_``. ``metadata`` maps
    corpus document ids to their metadata; with it, every retrieved or cited passage is checked
    against the question's filters a second time, independently of the index (``leak``).
    """

    dataset: str
    task: Task
    examples: Sequence[Example]
    retriever: Retriever
    truth: TruthScores | None = None
    metadata: Mapping[str, Mapping[str, Any]] | None = None


def done_keys(path: Path, *, retry_failed: bool = False) -> set[tuple[str, str, str]]:
    """Keys of the examples already in ``path``; a torn last line (killed mid-write) is redone."""
    keys: set[tuple[str, str, str]] = set()
    for rec in read_results(path):
        if retry_failed and rec.get("error"):
            continue
        keys.add((rec["dataset"], rec["method"], rec["id"]))
    return keys


def read_results(path: Path) -> list[dict[str, Any]]:
    """Every complete record of a results file, the last one per key winning."""
    if not path.exists():
        return []
    latest: dict[tuple[str, str, str], dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue  # only a write cut off by a kill; that example is simply run again
        latest[(rec["dataset"], rec["method"], rec["id"])] = rec
    return list(latest.values())


def run_eval(
    jobs: Iterable[Job],
    specs: Sequence[MethodSpec],
    lm: LanguageModel,
    out_dir: Path,
    *,
    base: Settings | None = None,
    overrides: dict[str, Any] | None = None,
    retry_failed: bool = False,
    on_done: Callable[[dict[str, Any]], None] | None = None,
    progress: bool = True,
    layout: Layout | None = None,
    force: bool = True,
) -> int:
    """Run every spec on every example not yet in ``out_dir/results.jsonl``; returns how many ran.

    ``layout`` forces the prompt layout (``plain`` or ``chatml``); by default it is the
    settings' ``layout``, whose ``auto`` follows the model's chat template, as the engine does.
    ``force`` completes answers that lack the answer
    cue (see the module notes); it never applies to long-form tasks.
    """
    from tqdm import tqdm

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / RESULTS_FILE
    done = done_keys(path, retry_failed=retry_failed)
    jobs = list(jobs)
    # Datasets take turns question by question, so a run cut short covers every dataset.
    depth = max((len(job.examples) for job in jobs), default=0)
    pending = [(job, job.examples[i], spec) for i in range(depth) for job in jobs if i < len(job.examples)
               for spec in specs if (job.dataset, spec.label, job.examples[i].id) not in done]
    cached = declared(lm)
    model_layout = layout_for(cached.chat_template)
    ran = 0
    with path.open("a", encoding="utf-8") as fh, tqdm(total=len(pending), disable=not progress,
                                                     unit="answer", dynamic_ncols=True) as bar:
        for job, ex, spec in pending:
            bar.set_description(f"{job.dataset} {spec.label}")
            settings = spec.settings(
                (base or Settings()).with_overrides(**{**DATASET_SETTINGS.get(job.dataset, {}), **(overrides or {})})
            )
            chosen = layout or (model_layout if settings.layout == "auto" else settings.layout)
            style = style_for(spec.method)
            # Fact questions (asked under filters, in any language) are answered with flare's own
            # prompts, which follow each question's language, as `flare ask` answers them.
            if job.task == "facts":
                template = PromptTemplate.default(chosen, style=style)
            else:
                template = template_for(job.dataset, task=job.task, layout=chosen, style=style)
            engine = Flare(lm, job.retriever, settings, template=template)
            # Every answer starts from the same cache: the prompt header, nothing of the question.
            # Without this a method would reuse the question's documents that the method before
            # it evaluated, and be timed as if they were free.
            cached.reset_cache(template.prefix)
            rec = answer_one(job, ex, spec.label, engine, settings, force=force)
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
            ran += 1
            bar.update(1)
            if on_done is not None:
                on_done(rec)
    return ran


def answer_one(
    job: Job, ex: Example, label: str, engine: Flare, settings: Settings, *, force: bool = True
) -> dict[str, Any]:
    """Answer and score one example; an exception becomes a failed (wrong) record with its error."""
    tracer = MemoryTracer(record_content=False)
    engine.tracer = tracer
    rec: dict[str, Any] = {
        "version": RECORD_VERSION, "dataset": job.dataset, "method": label, "id": ex.id,
        "question": ex.question, "answers": list(ex.answers), "task": job.task,
        "settings": settings.as_dict(), "error": None,
    }
    t0 = time.perf_counter()
    forced: str | None = None
    forced_seconds = 0.0
    try:
        filters = question_filters(ex)
        answer = engine.answer(ex.question, filters=filters)
        seconds = round(time.perf_counter() - t0, 3)
        if force and job.task in ("short", "yesno") and not extract_answer(answer.text)[1]:
            forced = force_answer(engine, ex.question, answer.text)
            forced_seconds = round(time.perf_counter() - t0 - seconds, 3)
    except Exception as exc:  # any failure is recorded and scored as wrong, never skipped
        rec.update(prediction="", seconds=round(time.perf_counter() - t0, 3), scores=failed_scores(job.task),
                   error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=8),
                   retrievals=0, lm_calls=0, sentences=0, retrieved_sentences=0, positions=[],
                   gold_recall=None, trace=tracer.traces[-1].to_dict() if tracer.traces else None)
        if job.truth is not None:
            rec["scores"].update(job.truth(rec))
        return rec
    trace = tracer.traces[-1].to_dict()
    steps = [s for s in trace["steps"] if s["sentence"]]
    retrieved_ids = [doc_id(r["id"]) for s in trace["steps"] for r in s["retrieved"]]
    extracted, _ = extract_answer(final_text(answer.text, forced))
    scores = score(job.task, ex, answer.text, forced=forced)
    if job.metadata is not None:
        cited = [doc_id(c.passage_id) for c in answer.sources]
        meta = job.metadata
        outside = sorted(i for i in {*retrieved_ids, *cited} if (m := meta.get(i)) is None or not filters.matches(m))
        rec["outside_filters"] = outside
        scores["leak"] = float(bool(outside) or bool(scores.get("secret")))
    rec.update(
        prediction=answer.text, forced=forced, forced_seconds=forced_seconds,
        extracted=extracted, seconds=seconds, stop_reason=answer.stop_reason,
        scores={**scores, **citation_scores(answer)},
        retrievals=answer.retrievals, lm_calls=answer.lm_calls,
        sentences=len(steps), retrieved_sentences=sum(1 for s in steps if s["queries"]),
        positions=[{"retrieved": bool(s["queries"]), "has_gold": _has_gold(job.task, ex, s["sentence"])}
                   for s in steps],
        retrieved_ids=sorted(set(retrieved_ids)),
        gold_recall=gold_recall(ex.supporting_ids, retrieved_ids),
        trace=trace,
    )
    if job.truth is not None:
        rec["scores"].update(job.truth(rec))
    return rec


def question_filters(ex: Example) -> Filters:
    """The trusted filters a question is asked under (``filters`` in its record; none by default)."""
    return Filters.parse(ex.extra.get("filters") or [])


def _has_gold(task: Task, ex: Example, sentence: str) -> bool | None:
    """Whether a sentence states a gold answer (short-answer tasks only; None elsewhere)."""
    if task != "short":
        return None
    text = f" {normalize(sentence)} "
    return any(f" {normalize(a)} " in text for a in ex.answers if normalize(a))
