"""The FLARE loop: draft → judge → form query → retrieve → regenerate → commit (M1–M7, M10).

One loop serves every method. The loop owns the answer: budgets, commits, citations, events and
the trace. A retrieval policy (:mod:`flare.engine.policies`) decides, for each sentence, when
and with what to retrieve. With FLARE direct the first sentence comes from documents retrieved
with the question (M5); each later sentence is drafted without documents, judged (M2), and if
unsure a query is formed from the draft (M3/M4), documents are retrieved and the whole sentence
is regenerated from them (M10). A confident draft is committed with no second LM call.

Every search runs under the request's :class:`Filters`, fixed when the run starts: nothing the
model writes or a document says can change them (C1). Budgets (C2) bound retrievals, retries per
information gap, output tokens, sentences and wall time.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Generator, Iterator
from dataclasses import dataclass

from flare.config import Settings
from flare.engine.events import Event, Finished, SentenceAccepted
from flare.engine.metered import MeteredLM
from flare.engine.methods import check_method, policy_for, prompt_style
from flare.engine.prompts import PromptTemplate, resolve_language
from flare.engine.restate import restates, retry_restated
from flare.engine.sentences import CUT_MARK, ends_complete, lookahead_tokens
from flare.engine.step import OMIT, Commit, Piece, Policy, RunState, StepContext, StepGen
from flare.engine.verification import verify
from flare.errors import InputError, ModelError
from flare.lm.base import LanguageModel, declared
from flare.retrieve.base import Retriever
from flare.retrieve.filters import NO_FILTERS, Filters
from flare.trace.schema import StepRecord, TraceRecord
from flare.trace.tracers import NullTracer, Tracer
from flare.types import Answer, Citation, EndReason, Sentence
from flare.verify.citations import supporting

MAX_QUESTION_CHARS = 4000


class Flare:
    """Answers questions with forward-looking active retrieval.

    Example::

        from flare import Flare, Settings, open_retriever, resolve_model
        engine = Flare(resolve_model("smollm2"), open_retriever("my-index"), Settings(theta=0.5))
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
        check_method(self.settings.method)  # an unknown method fails here, not at the first answer
        self.template = template or PromptTemplate.for_model(declared(lm).chat_template)
        # Built-in templates take the layout and exemplar style of each run's settings (see
        # template_for); a template passed in is used as is.
        self.tracer: Tracer = tracer or NullTracer()

    def answer(
        self, question: str, *, filters: Filters = NO_FILTERS, settings: Settings | None = None
    ) -> Answer:
        """Run the loop to the end and return the cited answer."""
        for event in self.stream(question, filters=filters, settings=settings):
            if isinstance(event, Finished):
                return event.answer
        raise AssertionError("stream ended without a Finished event")  # pragma: no cover

    def stream(
        self, question: str, *, filters: Filters = NO_FILTERS, settings: Settings | None = None
    ) -> Iterator[Event]:
        """Yield progress events and each *accepted* sentence, then :class:`Finished`.

        The loop of the paper, one sentence per turn until a budget or the model ends it: the
        run's policy writes the next sentence (retrieving for the question first, then drafting,
        judging, searching and rewriting as its method does), and the loop settles it (a restated
        question, budgets, repeats), verifies it and commits it with its citations.
        """
        s = settings or self.settings
        question = check_question(question)
        policy = policy_for(s)
        self._check_model(policy, s)
        template = self.template_for(s, question)
        lm = MeteredLM(self.lm)
        run = RunState(question, filters, s, self._new_trace(question, filters, s), time.perf_counter())
        stop_reason: EndReason = "max_sentences"
        for index in range(s.max_sentences):
            stop = self._time_or_token_cap(run)
            if stop is None:
                stop = yield from self._next_sentence(run, policy, lm, template, index)
            if stop is not None:
                stop_reason = stop
                break
        answer = Answer(
            question=question,
            sentences=tuple(run.sentences),
            sources=tuple(run.sources.values()),
            stop_reason=stop_reason,
            trace_id=run.trace.trace_id,
            retrievals=run.retrievals,
            lm_calls=lm.calls,
            caps_hit=tuple(run.caps_hit),
        )
        self._finish_trace(run, lm, answer)
        yield Finished(answer)

    def _check_model(self, policy: Policy, s: Settings) -> None:
        """A method that reads token probabilities needs a model that gives them (unless θ=0)."""
        if policy.needs_logprobs and s.theta > 0 and not self.lm.supports_logprobs:
            rule = f"trigger={s.trigger}" if s.method == "flare" else f"method {s.method!r}"
            raise ModelError(
                f"model {self.lm.name!r} reports no token probabilities, which {rule} needs",
                "use --trigger support (the evidence trigger, which needs none), or --method single, none or instruct",
            )

    def _new_trace(self, question: str, filters: Filters, s: Settings) -> TraceRecord:
        return TraceRecord(
            trace_id=uuid.uuid4().hex,
            question=question,
            method=s.method,
            model=self.lm.name,
            retriever=self.retriever.name,
            filters=str(filters),
            settings=s.as_dict(),
            started_at=time.time(),
        )

    def _next_sentence(
        self, run: RunState, policy: Policy, lm: MeteredLM, template: PromptTemplate, index: int
    ) -> Generator[Event, None, EndReason | None]:
        """One turn of the loop for sentence ``index``: the reason the answer stops, or None."""
        record = StepRecord(index=index, kind="draft")
        ctx = StepContext(run, lm, self.retriever, template, record, record_content=self.tracer.record_content)
        turn = _Turn(ctx, lm, lm.snapshot())
        outcome = yield from turn.write(policy)
        if outcome == OMIT:
            run.reject(record.draft or "")
            return None
        if isinstance(outcome, str):
            return outcome
        commit = turn.unrestated(outcome)
        if commit is None:  # a restatement after real sentences: the answer ends here
            return "end"
        stop = _settle(run, commit.piece, template.language)
        if stop is not None:
            return stop
        checked = yield from turn.verified(commit)
        if checked is None:  # dropped before acceptance: no event, no text, only the trace
            _drop(run, record, commit.piece)
            return _stop_after(commit.piece)
        yield self._accept(run, record, checked)
        return _stop_after(checked.piece)

    def _accept(self, run: RunState, record: StepRecord, commit: Commit) -> SentenceAccepted:
        """Commit the verified sentence to the answer and its step record; the event that shows it."""
        sentence, new_sources = self._commit(run, commit)
        record.sentence, record.citations = sentence.text, list(sentence.citations)
        record.grounded = sentence.grounded
        record.output_tokens = len(commit.piece.tokens)
        return SentenceAccepted(record.index, sentence, new_sources)

    def template_for(self, settings: Settings, question: str = "") -> PromptTemplate:
        """The prompt template a run with ``settings`` uses for ``question``.

        flare's built-in template comes in the run's ``layout`` (``auto``: the model's), with the
        exemplars its method needs (``[Search(...)]`` tags for ``instruct``, ``Follow up:``
        questions for ``decompose``) and in the run's ``language`` (``auto``: the question's,
        which also sets the look-ahead cap); a template given to the engine keeps its text.
        """
        layout = None if settings.layout == "auto" else settings.layout
        language = resolve_language(settings.language, question)
        return self.template.adapted(layout=layout, style=prompt_style(settings.method), language=language)

    def _time_or_token_cap(self, run: RunState) -> EndReason | None:
        if time.perf_counter() - run.started >= run.settings.max_seconds:
            return "max_seconds"
        if run.output_tokens >= run.settings.max_output_tokens:
            return "max_output_tokens"
        return None

    def _commit(self, run: RunState, commit: Commit) -> tuple[Sentence, tuple[Citation, ...]]:
        """Append the sentence, citing the step's documents that back it (C4, C6).

        A verified sentence cites the fewest passages that back it; one they do not back (or back
        only in part) cites nothing: it is shown marked, never with a citation that would vouch
        for it. The passages it was checked against stay in the trace (``evidence``).
        """
        piece, docs, verdict = commit.piece, commit.docs, commit.support
        new: list[Citation] = []
        numbers: list[int] = []
        if verdict is not None:
            cited = list(verdict.cited) if verdict.passes else []
        else:
            cited = supporting(piece.text, docs) if docs and commit.grounded else []
        for i in cited:
            p = docs[i]
            if p.id not in run.sources:
                c = Citation(len(run.sources) + 1, p.id, p.title, p.text)
                run.sources[p.id] = c
                new.append(c)
            numbers.append(run.sources[p.id].n)
        sentence = Sentence(
            piece.text,
            commit.retrieved,
            tuple(sorted(set(numbers))),
            commit.grounded,
            verdict.label if verdict is not None else "unchecked",
            verdict.unsupported if verdict is not None else (),
        )
        run.sentences.append(sentence)
        run.said.append(sentence.text)
        run.output_tokens += len(piece.tokens)
        return sentence, tuple(new)

    def _finish_trace(self, run: RunState, lm: MeteredLM, answer: Answer) -> None:
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


@dataclass(slots=True)
class _Turn:
    """One sentence's turn: the policy's context, and the LM use charged to its step record."""

    ctx: StepContext
    lm: MeteredLM
    before: tuple[int, int]  # the meter when the turn began

    def charge(self) -> None:
        """Record the LM calls and tokens this turn has used so far."""
        self.ctx.record.lm_calls, self.ctx.record.lm_tokens_evaluated = self.lm.since(self.before)

    def write(self, policy: Policy) -> StepGen:
        """The policy's step: retrieve, draft, judge, search and rewrite as its method does.

        The step is in the trace however it ends, even when it fails or the stream is closed.
        """
        try:
            return (yield from policy.step(self.ctx))
        finally:
            self.charge()
            self.ctx.run.trace.steps.append(self.ctx.record)

    def unrestated(self, commit: Commit) -> Commit | None:
        """The commit, unless its sentence only restates the question: then one retry (or None)."""
        piece = commit.piece
        if not (piece.text and not piece.truncated and restates(piece.text, self.ctx.run.question)):
            return commit
        retried = retry_restated(self.ctx, commit)
        self.charge()
        return retried

    def verified(self, commit: Commit) -> Generator[Event, None, Commit | None]:
        """The commit to accept after verification (``verify=off``: as it is), or None to drop it."""
        if self.ctx.settings.verify == "off":
            return commit
        checked = yield from verify(self.ctx, commit)
        self.charge()
        return checked


def _settle(run: RunState, piece: Piece, language: str) -> EndReason | None:
    """Why ``piece`` must not be committed and the answer stops, or None; marks a cut sentence.

    An empty sentence ends the answer; half a sentence is never committed for want of output
    budget; a sentence a cap or a loop ended mid-way gets :data:`CUT_MARK`; a repeat of a
    sentence already said or rejected stops the answer.
    """
    s = run.settings
    if not piece.text:
        return "end"
    room = s.max_output_tokens - run.output_tokens  # what the output budget left this step
    by_budget = room <= len(piece.tokens) or (piece.cut and room <= lookahead_tokens(s, language))
    if piece.truncated and by_budget:
        return "max_output_tokens"  # never commit half a sentence
    if piece.cut or (piece.looped and not ends_complete(piece.text)):
        piece.text += CUT_MARK  # a cap or a loop ended it mid-sentence: never shown as whole
    if piece.cut:
        run.note_cap("max_sentence_tokens")
    if any(piece.text == prev.text for prev in run.sentences) or piece.text in run.rejected:
        return "repetition"  # this step's sentence is the repeat: it is never committed
    return None


def _drop(run: RunState, record: StepRecord, piece: Piece) -> None:
    """Keep a sentence verification dropped out of the answer; its tokens still count."""
    run.reject(piece.text)
    run.output_tokens += len(piece.tokens)  # generated all the same: the budget counts it
    record.rejected.append(piece.text)


def _stop_after(piece: Piece) -> EndReason | None:
    """Why the answer ends after this turn's sentence (a cap cut it, a loop, the model's end), or None."""
    if piece.cut:
        return "max_sentence_tokens"
    if piece.looped:
        return "repetition"
    if piece.model_done:
        return "end"
    return None


def check_question(question: str) -> str:
    """The question with its whitespace normalised, or an InputError saying what is wrong."""
    if not isinstance(question, str) or not question.strip():
        raise InputError("the question is empty", 'ask something, e.g. flare ask "Who founded Versace?"')
    if len(question) > MAX_QUESTION_CHARS:
        raise InputError(
            f"the question is {len(question)} characters long",
            f"keep it under {MAX_QUESTION_CHARS} characters",
        )
    if not question.isascii() and any("\ud800" <= c <= "\udfff" for c in question):
        raise InputError(
            "the question is not valid Unicode (a lone surrogate, e.g. from bytes that are not UTF-8)",
            "pass the question as UTF-8 text",
        )
    return " ".join(question.split())


