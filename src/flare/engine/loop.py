"""The FLARE loop: draft → judge → form query → retrieve → regenerate → commit (M1–M7, M10).

One loop serves every method; a method only changes *when* and *with what* it retrieves:

* ``flare`` — the first sentence comes from documents retrieved with the question (M5); each
  later sentence is drafted without documents, judged (M2), and if unsure a query is formed from
  the draft (M3 masking or M4 questions), documents are retrieved and the whole sentence is
  regenerated from them (M10). A confident draft is committed with no second LM call.
* ``single`` — retrieve once with the question and keep those documents for every sentence.
* ``none`` — never retrieve.

Every search runs under the request's :class:`Filters`, fixed when the run starts: nothing the
model writes or a document says can change them (C1). Budgets (C2) bound retrievals, retries per
information gap, output tokens, sentences and wall time.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field

from flare.config import Settings
from flare.engine.events import Event, Finished, Rewriting, Searching, SentenceAccepted
from flare.engine.judge import judge
from flare.engine.metered import MeteredLM
from flare.engine.prompts import PromptTemplate
from flare.engine.sentences import ends_sentence, first_sentence_end
from flare.errors import InputError, ModelError, RetrieverError
from flare.lm.base import LanguageModel
from flare.query.explicit import ask_questions, low_spans
from flare.query.implicit import masked_query
from flare.retrieve.base import Retriever
from flare.retrieve.filters import Filters
from flare.trace.schema import RetrievedRecord, StepRecord, TraceRecord
from flare.trace.tracers import NullTracer, Tracer
from flare.types import Answer, Citation, Completion, Hit, Passage, Sentence, TokenLogprob
from flare.verify.citations import supporting

MAX_QUESTION_CHARS = 4000


@dataclass(slots=True)
class _Piece:
    """The first sentence cut out of a completion, with exactly its tokens."""

    text: str
    tokens: tuple[TokenLogprob, ...]
    model_done: bool  # the model ended its answer right after this sentence
    truncated: bool = False  # hit max_tokens before the sentence ended


_Outcome = str | tuple[_Piece, Sequence[Passage], bool, bool]
"""What a step yields back: the reason to stop, or (sentence, its documents, retrieved, grounded)."""


@dataclass(slots=True)
class _Run:
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


class Flare:
    """Answers questions with forward-looking active retrieval.

    Example::

        from flare import Flare, Settings, open_index, load_model
        engine = Flare(load_model("smollm2"), open_index("my-index"), Settings(theta=0.5))
        answer = engine.answer("Who designed the Eiffel Tower?", filters=Filters.parse(["year>=1880"]))
        print(answer.render())

    ``filters`` are the caller's trusted constraints (scope and permissions). They apply to every
    search of the answer and can only be narrowed, never widened, by anything generated.
    """

    def __init__(
        self,
        lm: LanguageModel,
        retriever: Retriever,
        settings: Settings | None = None,
        *,
        template: PromptTemplate | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        self.lm = lm
        self.retriever = retriever
        self.settings = settings or Settings()
        self.template = template or PromptTemplate.for_model(getattr(lm, "chat_template", None))
        self.tracer: Tracer = tracer or NullTracer()

    def answer(
        self, question: str, *, filters: Filters | None = None, settings: Settings | None = None
    ) -> Answer:
        """Run the loop to the end and return the cited answer."""
        for event in self.stream(question, filters=filters, settings=settings):
            if isinstance(event, Finished):
                return event.answer
        raise AssertionError("stream ended without a Finished event")  # pragma: no cover

    def stream(
        self, question: str, *, filters: Filters | None = None, settings: Settings | None = None
    ) -> Iterator[Event]:
        """Yield progress events and each *accepted* sentence, then :class:`Finished`."""
        s = settings or self.settings
        question = _check_question(question)
        if s.method == "flare" and s.theta > 0 and not self.lm.supports_logprobs:
            raise ModelError(
                f"model {self.lm.name!r} reports no token probabilities, which FLARE direct needs",
                "use a backend with logprobs, or --method single / none",
            )
        flt = filters or Filters()
        lm = MeteredLM(self.lm)
        trace = TraceRecord(
            trace_id=uuid.uuid4().hex,
            question=question,
            method=s.method,
            model=self.lm.name,
            retriever=self.retriever.name,
            filters=str(flt),
            settings=s.as_dict(),
            started_at=time.time(),
        )
        run = _Run(question, flt, s, trace, time.perf_counter())
        stop_reason = "max_sentences"
        for index in range(s.max_sentences):
            cap = self._time_or_token_cap(run)
            if cap:
                stop_reason = cap
                break
            step = StepRecord(index=index, kind="draft")
            before = lm.snapshot()
            try:
                outcome = yield from self._step(run, lm, step)
            finally:
                step.lm_calls, step.lm_tokens_evaluated = lm.since(before)
                trace.steps.append(step)
            if isinstance(outcome, str):
                stop_reason = outcome
                break
            piece, docs, retrieved, grounded = outcome
            if not piece.text:
                stop_reason = "end"
                break
            if piece.truncated and run.output_tokens + len(piece.tokens) >= s.max_output_tokens:
                stop_reason = "max_output_tokens"  # never commit half a sentence
                break
            if any(piece.text == prev.text for prev in run.sentences):
                step.decision += "+repetition"
                stop_reason = "repetition"
                break
            sentence, new_sources = self._commit(run, piece, docs, retrieved, grounded)
            step.sentence, step.citations, step.grounded = sentence.text, list(sentence.citations), grounded
            step.output_tokens = len(piece.tokens)
            yield SentenceAccepted(index, sentence, new_sources)
            if piece.model_done:
                stop_reason = "end"
                break
        answer = Answer(
            question=question,
            sentences=tuple(run.sentences),
            sources=tuple(run.sources.values()),
            stop_reason=stop_reason,
            trace_id=trace.trace_id,
            retrievals=run.retrievals,
            lm_calls=lm.calls,
            caps_hit=tuple(run.caps_hit),
        )
        self._finish_trace(run, lm, answer)
        yield Finished(answer)

    # -- one sentence -------------------------------------------------------------------------

    def _step(self, run: _Run, lm: MeteredLM, step: StepRecord) -> Generator[Event, None, _Outcome]:
        """Produce one sentence; returns what to commit, or the reason to stop."""
        s = run.settings
        if s.method != "none" and step.index == 0:
            return (yield from self._initial_step(run, lm, step))
        if s.method != "flare":
            step.kind, step.decision = "generate", "generate"
            docs = run.first_docs if s.method == "single" else []
            return self._generate(run, lm, step, docs, "generate"), docs, False, True

        base = run.first_docs if s.keep_first_docs else []
        piece = self._generate(run, lm, step, base, "draft")
        step.draft = piece.text
        step.draft_tokens = [(t.text, round(t.prob, 4)) for t in piece.tokens]
        if not piece.text:
            step.decision = "end"
            return piece, [], False, True
        verdict = judge(piece.text, piece.tokens, s)
        step.low_tokens = [(t, round(p, 4)) for t, p in verdict.low_tokens]
        step.threshold = verdict.threshold
        if not verdict.retrieve:
            step.decision = "accept"
            return piece, base, False, True

        queries = _queries_for(run, lm, piece, step)
        remaining = s.max_retrievals - run.retrievals
        if remaining <= 0:
            return self._capped(run, step, piece, "max_retrievals")
        queries = queries[:remaining]
        gap = _gap_key(queries)
        if run.gaps.get(gap, 0) >= s.max_retries_per_gap:
            return self._capped(run, step, piece, "max_retries_per_gap")
        run.gaps[gap] = run.gaps.get(gap, 0) + 1
        yield Searching(step.index, len(queries))
        hits = self._search(run, queries, step)
        if not hits:
            step.decision = "no_evidence"
            if s.on_missing == "stop":
                return "no_evidence"
            return piece, [], False, False
        if s.conditional_commit and hits[0].score < s.min_relevance:
            step.decision = "irrelevant"
            return piece, [], True, False
        docs = _dedupe([h.passage for h in hits] + list(base))
        step.decision = "retrieve"
        yield Rewriting(step.index)
        return self._generate(run, lm, step, docs, "regenerate"), docs, True, True

    def _initial_step(
        self, run: _Run, lm: MeteredLM, step: StepRecord
    ) -> Generator[Event, None, _Outcome]:
        """M5: the first sentence is generated from documents retrieved with the question."""
        step.kind = "initial"
        if run.settings.max_retrievals < 1:
            _note_cap(run, "max_retrievals")
            step.decision = "cap:max_retrievals"
            return self._generate(run, lm, step, [], "generate"), [], False, False
        yield Searching(step.index, 1)
        hits = self._search(run, [run.question], step)
        if not hits:
            step.decision = "no_evidence"
            if run.settings.on_missing == "stop":
                return "no_evidence"
            return self._generate(run, lm, step, [], "generate"), [], False, False
        run.first_docs = [h.passage for h in hits]
        step.decision = "retrieve"
        return self._generate(run, lm, step, run.first_docs, "generate"), run.first_docs, True, True

    def _generate(
        self, run: _Run, lm: MeteredLM, step: StepRecord, docs: Sequence[Passage], stage: str
    ) -> _Piece:
        t0 = time.perf_counter()
        piece = first_piece(self._complete(lm, run, docs))
        step.timings[stage] = round(time.perf_counter() - t0, 4)
        return piece

    def _capped(self, run: _Run, step: StepRecord, piece: _Piece, cap: str) -> _Outcome:
        """A budget forbids retrieving: keep the draft, flagged as ungrounded (C2)."""
        _note_cap(run, cap)
        step.decision = f"cap:{cap}"
        return piece, [], False, False

    def _time_or_token_cap(self, run: _Run) -> str | None:
        if time.perf_counter() - run.started >= run.settings.max_seconds:
            return "max_seconds"
        if run.output_tokens >= run.settings.max_output_tokens:
            return "max_output_tokens"
        return None

    def _complete(self, lm: MeteredLM, run: _Run, docs: Sequence[Passage]) -> Completion:
        prompt = self.template.render(docs, run.question, run.answer_so_far)
        budget = min(run.settings.max_sentence_tokens, run.settings.max_output_tokens - run.output_tokens)
        return lm.complete(
            prompt, max_tokens=max(budget, 1), stop=self.template.stop, stop_when=ends_sentence
        )

    def _search(self, run: _Run, queries: Sequence[str], step: StepRecord) -> list[Hit]:
        """Search every query under the run's filters and interleave the rankings."""
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
        merged = _interleave(rankings, run.settings.k)
        step.queries = list(queries)
        step.retrieved = [
            RetrievedRecord(
                h.passage.id,
                round(h.score, 4),
                h.passage.title,
                h.passage.text if self.tracer.record_content else None,
            )
            for h in merged
        ]
        step.timings["retrieve"] = step.timings.get("retrieve", 0.0) + time.perf_counter() - t0
        return merged

    def _commit(
        self, run: _Run, piece: _Piece, docs: Sequence[Passage], retrieved: bool, grounded: bool
    ) -> tuple[Sentence, tuple[Citation, ...]]:
        new: list[Citation] = []
        numbers: list[int] = []
        if docs and grounded:
            for i in supporting(piece.text, docs):
                p = docs[i]
                if p.id not in run.sources:
                    c = Citation(len(run.sources) + 1, p.id, p.title, p.text)
                    run.sources[p.id] = c
                    new.append(c)
                numbers.append(run.sources[p.id].n)
        sentence = Sentence(piece.text, retrieved, tuple(sorted(set(numbers))), grounded)
        run.sentences.append(sentence)
        run.output_tokens += len(piece.tokens)
        return sentence, tuple(new)

    def _finish_trace(self, run: _Run, lm: MeteredLM, answer: Answer) -> None:
        t = run.trace
        t.answer = answer.text
        t.rendered = answer.render()
        t.stop_reason = answer.stop_reason
        t.caps_hit = list(answer.caps_hit)
        t.sources = [{"n": c.n, "id": c.passage_id, "title": c.title} for c in answer.sources]
        t.retrievals = run.retrievals
        t.lm_calls = lm.calls
        t.lm_tokens_evaluated = lm.tokens_evaluated
        t.output_tokens = run.output_tokens
        t.seconds = round(time.perf_counter() - run.started, 4)
        self.tracer.emit(t)


def first_piece(completion: Completion) -> _Piece:
    """Cut the first sentence (and exactly its tokens) out of a completion."""
    text = completion.text
    final = completion.finish_reason != "sentence"
    end = first_sentence_end(text, final=final)
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
    return _Piece(text[:end].strip(), tuple(tokens), done, truncated)


def _interleave(rankings: Sequence[Sequence[Hit]], k: int) -> list[Hit]:
    """Round-robin merge of several rankings, first occurrence of a passage wins."""
    out: list[Hit] = []
    seen: set[str] = set()
    depth = max((len(r) for r in rankings), default=0)
    for i in range(depth):
        for ranking in rankings:
            if i < len(ranking) and ranking[i].passage.id not in seen:
                seen.add(ranking[i].passage.id)
                out.append(ranking[i])
    return out[:k]


def _check_question(question: str) -> str:
    if not isinstance(question, str) or not question.strip():
        raise InputError("the question is empty", 'ask something, e.g. flare ask "Who founded Versace?"')
    if len(question) > MAX_QUESTION_CHARS:
        raise InputError(
            f"the question is {len(question)} characters long",
            f"keep it under {MAX_QUESTION_CHARS} characters",
        )
    return " ".join(question.split())


def _note_cap(run: _Run, cap: str) -> None:
    if cap not in run.caps_hit:
        run.caps_hit.append(cap)


def _dedupe(passages: Sequence[Passage]) -> list[Passage]:
    seen: set[str] = set()
    return [p for p in passages if not (p.id in seen or seen.add(p.id))]


def _gap_key(queries: Sequence[str]) -> str:
    return " | ".join(sorted(" ".join(q.lower().split()) for q in queries))


def _queries_for(
    run: _Run, lm: MeteredLM, piece: _Piece, step: StepRecord
) -> list[str]:
    """Form the search queries for an unsure draft (M3 implicit or M4 explicit)."""
    s = run.settings
    queries: list[str] = []
    if s.query == "explicit":
        spans = low_spans(piece.tokens, s.beta)
        if spans:
            t0 = time.perf_counter()
            context = f"{run.answer_so_far} {piece.text}".strip()
            queries = ask_questions(lm, run.question, context, spans)
            step.timings["questions"] = time.perf_counter() - t0
    if not queries:
        masked = masked_query(piece.tokens, s.beta)
        queries = [masked] if masked else []
    if s.query_with_question or not queries:
        queries = [f"{run.question} {q}".strip() for q in queries] or [run.question]
    return queries
