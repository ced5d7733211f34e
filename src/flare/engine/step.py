"""What a retrieval policy is, and what it may do inside one step: generate, search, hit a cap.

The loop (:mod:`flare.engine.loop`) owns the answer's state, budgets, commits and the trace; a
:class:`Policy` decides *when* and *with what* to retrieve, using only the operations of
:class:`StepContext`. Searches always run under the run's filters, which a policy cannot see or
change. The built-in policies live in :mod:`flare.engine.policies` and
:mod:`flare.engine.baselines`; :mod:`flare.engine.methods` maps method names to them.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from flare.config import Settings
from flare.engine.events import Event, Searching
from flare.engine.metered import MeteredLM
from flare.engine.prompts import PromptTemplate
from flare.engine.sentences import ends_sentence, first_sentence_end
from flare.errors import RetrieverError
from flare.retrieve.filters import Filters
from flare.trace.schema import RetrievedRecord, StepRecord, TraceRecord
from flare.types import Answer, Citation, Completion, Hit, Passage, Sentence, TokenLogprob

if TYPE_CHECKING:
    from flare.retrieve.base import Retriever


@dataclass(slots=True)
class Piece:
    """The first sentence cut out of a completion, with exactly its tokens."""

    text: str
    tokens: tuple[TokenLogprob, ...]
    model_done: bool  # the model ended its answer right after this sentence
    truncated: bool = False  # hit max_tokens before the sentence ended


@dataclass(frozen=True, slots=True)
class Commit:
    """A step's result: the sentence, the documents it was written from, and how."""

    piece: Piece
    docs: Sequence[Passage] = ()
    retrieved: bool = False
    grounded: bool = True


Outcome = str | Commit
"""What a step returns: a :class:`Commit`, or the reason the answer must stop."""

StepGen = Generator[Event, None, Outcome]
"""A policy's step: yields progress events, returns its :data:`Outcome`."""


@dataclass(slots=True)
class RunState:
    """Everything the loop knows about the answer being written."""

    question: str
    filters: Filters
    settings: Settings
    trace: TraceRecord
    started: float
    sentences: list[Sentence] = field(default_factory=list)
    sources: dict[str, Citation] = field(default_factory=dict)
    gaps: dict[str, int] = field(default_factory=dict)
    first_docs: list[Passage] = field(default_factory=list)
    retrievals: int = 0
    output_tokens: int = 0
    caps_hit: list[str] = field(default_factory=list)

    @property
    def answer_so_far(self) -> str:
        return Answer(self.question, tuple(self.sentences), (), "", "").text

    def note_cap(self, cap: str) -> None:
        if cap not in self.caps_hit:
            self.caps_hit.append(cap)


class StepContext:
    """The operations available to a policy while it produces sentence ``record.index``."""

    def __init__(
        self,
        run: RunState,
        lm: MeteredLM,
        retriever: Retriever,
        template: PromptTemplate,
        record: StepRecord,
        *,
        record_content: bool,
    ) -> None:
        self.run = run
        self.lm = lm
        self.retriever = retriever
        self.template = template
        self.record = record
        self._record_content = record_content

    @property
    def settings(self) -> Settings:
        return self.run.settings

    @property
    def index(self) -> int:
        return self.record.index

    def complete(self, docs: Sequence[Passage], *, max_tokens: int | None = None) -> Completion:
        """Continue ``[header, docs, question, answer so far]`` up to the end of a sentence."""
        s = self.run.settings
        prompt = self.template.render(docs, self.run.question, self.run.answer_so_far)
        budget = min(max_tokens or s.max_sentence_tokens, s.max_output_tokens - self.run.output_tokens)
        return self.lm.complete(
            prompt, max_tokens=max(budget, 1), stop=self.template.stop, stop_when=ends_sentence
        )

    def generate(self, docs: Sequence[Passage], stage: str) -> Piece:
        """The next sentence written from ``docs``; ``stage`` names its timing in the trace."""
        t0 = time.perf_counter()
        piece = first_piece(self.complete(docs))
        self.record.timings[stage] = round(time.perf_counter() - t0, 4)
        return piece

    def search(self, queries: Sequence[str]) -> list[Hit]:
        """Search every query under the run's filters and interleave the rankings.

        Each query counts as one retrieval. A hit that fails the filters (a retriever bug) is
        never passed on: the run fails loudly instead.
        """
        run = self.run
        t0 = time.perf_counter()
        rankings = []
        for q in queries:
            hits = self.retriever.search(q, k=run.settings.k, filters=run.filters or None)
            for h in hits:
                if not run.filters.matches(h.passage.meta):
                    raise RetrieverError(
                        f"retriever {self.retriever.name!r} returned passage {h.passage.id!r} "
                        "outside the request's filters; it was withheld",
                        "this is a retriever bug: filters must be applied inside the search",
                    )
            rankings.append(hits)
            run.retrievals += 1
        merged = interleave(rankings, run.settings.k)
        self.record.queries.extend(queries)
        self.record.retrieved.extend(
            RetrievedRecord(
                h.passage.id,
                round(h.score, 4),
                h.passage.title,
                h.passage.text if self._record_content else None,
            )
            for h in merged
        )
        self.record.timings["retrieve"] = round(
            self.record.timings.get("retrieve", 0.0) + time.perf_counter() - t0, 4
        )
        return merged

    @property
    def retrievals_left(self) -> int:
        return self.run.settings.max_retrievals - self.run.retrievals

    def capped(self, piece: Piece, cap: str) -> Commit:
        """A budget forbids retrieving: keep the sentence, flagged as ungrounded (C2)."""
        self.run.note_cap(cap)
        self.record.decision = f"cap:{cap}"
        return Commit(piece, (), False, False)


class Policy(Protocol):
    """Decides when and what to retrieve for each sentence of one answer.

    A fresh policy is made for every answer (see :func:`flare.engine.methods.register_policy`),
    so it may keep per-answer state. ``needs_logprobs`` says whether it reads token
    probabilities; the engine refuses to run it on a model without them (unless θ=0).

    Example, a policy that retrieves with the question before every sentence::

        class AlwaysQuestion:
            name = "always_question"
            needs_logprobs = False

            def step(self, ctx: StepContext) -> StepGen:
                yield Searching(ctx.index, 1)
                docs = [h.passage for h in ctx.search([ctx.run.question])]
                ctx.record.kind, ctx.record.decision = "always_question", "retrieve"
                return Commit(ctx.generate(docs, "generate"), docs, True, bool(docs))
    """

    name: str
    needs_logprobs: bool

    def step(self, ctx: StepContext) -> StepGen:
        """Produce one sentence (yielding progress events), or return why the answer stops."""
        ...


def initial_step(ctx: StepContext) -> StepGen:
    """M5: the first sentence is generated from documents retrieved with the question."""
    ctx.record.kind = "initial"
    if ctx.retrievals_left < 1:
        return ctx.capped(ctx.generate([], "generate"), "max_retrievals")
    yield Searching(ctx.index, 1)
    hits = ctx.search([ctx.run.question])
    if not hits:
        ctx.record.decision = "no_evidence"
        if ctx.settings.on_missing == "stop":
            return "no_evidence"
        return Commit(ctx.generate([], "generate"), (), False, False)
    ctx.run.first_docs = [h.passage for h in hits]
    ctx.record.decision = "retrieve"
    return Commit(ctx.generate(ctx.run.first_docs, "generate"), ctx.run.first_docs, True, True)


def first_piece(completion: Completion) -> Piece:
    """Cut the first sentence (and exactly its tokens) out of a completion."""
    text = completion.text
    end = first_sentence_end(text, final=completion.finish_reason != "sentence")
    if end is None:
        end = len(text)
    tokens: list[TokenLogprob] = []
    pos = 0
    for tok in completion.tokens:
        if pos >= end:
            break
        take = tok.text[: end - pos]
        tokens.append(tok if take == tok.text else TokenLogprob(take, tok.logprob))
        pos += len(tok.text)
    rest = text[end:]
    done = completion.finish_reason == "stop" and not rest.strip()
    truncated = completion.finish_reason == "length" and end >= len(text.rstrip())
    return Piece(text[:end].strip(), tuple(tokens), done, truncated)


def interleave(rankings: Sequence[Sequence[Hit]], k: int) -> list[Hit]:
    """Round-robin merge of several rankings; the first occurrence of a passage wins."""
    out: list[Hit] = []
    seen: set[str] = set()
    depth = max((len(r) for r in rankings), default=0)
    for i in range(depth):
        for ranking in rankings:
            if i < len(ranking) and ranking[i].passage.id not in seen:
                seen.add(ranking[i].passage.id)
                out.append(ranking[i])
    return out[:k]


def dedupe(passages: Sequence[Passage]) -> list[Passage]:
    """Passages in order, each id once."""
    seen: set[str] = set()
    out = []
    for p in passages:
        if p.id not in seen:
            seen.add(p.id)
            out.append(p)
    return out
