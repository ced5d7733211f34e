"""What a retrieval policy is, and what it may do inside one step: generate, search, hit a cap.

The loop (:mod:`flare.engine.loop`) owns the answer's state, budgets, commits and the trace; a
:class:`Policy` decides *when* and *with what* to retrieve, using only the operations of
:class:`StepContext`. Searches always run under the run's filters, which a policy cannot see or
change. The built-in policies live in :mod:`flare.engine.policies` and
:mod:`flare.engine.baselines`; :mod:`flare.engine.methods` maps method names to them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Generator, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import TYPE_CHECKING, Final, Literal, Protocol

from flare.config import Settings
from flare.engine.events import Event, Searching
from flare.engine.metered import MeteredLM
from flare.engine.prompts import PromptTemplate
from flare.engine.sentences import ends_complete, lookahead_tokens, repeat_words, whole_words_end
from flare.errors import RetrieverError
from flare.retrieve.filters import Filters
from flare.text import RepeatWatch, SentenceWatch, content_words, first_sentence_end, fold, repeated_ngram
from flare.trace.schema import Decision, RetrievedRecord, StepRecord, TraceRecord
from flare.types import Answer, Citation, Completion, EndReason, Hit, Passage, Sentence, TokenLogprob
from flare.verify.support import DEFAULT as SUPPORT
from flare.verify.support import Support, claim_lift, exemplar_leaks
from flare.verify.support import check as check_support

if TYPE_CHECKING:
    from flare.retrieve.base import Retriever


@dataclass(slots=True)
class Piece:
    """The first sentence cut out of a completion, with exactly its tokens."""

    text: str
    tokens: tuple[TokenLogprob, ...]
    model_done: bool  # the model ended its answer right after this sentence
    truncated: bool = False  # hit max_tokens before the sentence ended
    looped: bool = False  # cut where the model began repeating itself (see Settings.repeat_ngram)
    cut: bool = False  # a sentence that a cap ended mid-way; its last, maybe partial, word is dropped


@dataclass(frozen=True, slots=True)
class Commit:
    """A step's result: the sentence, the documents it was written from, and how.

    The flags are keyword-only, so a commit reads as what it claims:
    ``Commit(piece, docs, retrieved=True)``, ``Commit(piece, grounded=False)``.
    """

    piece: Piece
    docs: Sequence[Passage] = ()
    _: KW_ONLY
    retrieved: bool = False  # documents were searched for this sentence
    grounded: bool = True  # written from documents that back it (False: flagged ungrounded)
    support: Support | None = None  # the checker's verdict against ``docs``, if already known


OMIT: Final = "omit"
"""A step's outcome when its sentence is skipped and the answer goes on (``on_missing="omit"``)."""

Outcome = Commit | EndReason | Literal["omit"]
"""What a step returns: a :class:`Commit`, :data:`OMIT`, or the reason the answer must stop."""

RetrievalCap = Literal["max_retrievals", "max_retries_per_gap"]
"""The budgets that can forbid a search while the answer goes on."""
_CAP_DECISIONS: dict[RetrievalCap, Decision] = {
    "max_retrievals": "cap:max_retrievals", "max_retries_per_gap": "cap:max_retries_per_gap"
}  # fmt: skip

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
    gaps: list[tuple[frozenset[str], int]] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)  # sentences dropped or omitted, never shown
    said: list[str] = field(default_factory=list)  # every sentence in the prompt: accepted and rejected
    first_docs: list[Passage] = field(default_factory=list)
    followed: list[Passage] = field(default_factory=list)  # found for names the answer brought in
    followed_upto: int = 0  # sentences whose names have been searched for
    retrievals: int = 0
    output_tokens: int = 0
    caps_hit: list[str] = field(default_factory=list)

    @property
    def answer_so_far(self) -> str:
        """What the model has said so far, as its prompts show it.

        Rejected sentences stay in the prompt (never in any output): the model then goes on to
        its next sentence instead of writing the rejected one again, word for word.
        """
        return Answer(self.question, tuple(Sentence(t, False) for t in self.said), (), "", "").text

    def reject(self, text: str) -> None:
        """Keep ``text`` out of the answer but in the model's context (see :attr:`answer_so_far`)."""
        self.rejected.append(text)
        self.said.append(text)

    def count_gap(self, gap: frozenset[str]) -> int:
        """Count one more search for ``gap`` and return how many it has had, this one included.

        Gaps are compared by their words, so a reworded query for the same missing fact ("the
        village lies in the region of" after "village is in the region of") is the same gap:
        two gaps are one when they share at least half of their words.
        """
        for i, (words, n) in enumerate(self.gaps):
            if words == gap or (words and gap and len(words & gap) * 2 >= len(words | gap)):
                self.gaps[i] = (words | gap, n + 1)
                return n + 1
        self.gaps.append((gap, 1))
        return 1

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

    def complete(self, docs: Sequence[Passage], *, max_tokens: int | None = None,
                 new: Sequence[Passage] = ()) -> Completion:  # fmt: skip
        """Continue ``[header, docs, question, answer so far]`` up to the end of a sentence.

        ``new`` passages go after ``docs`` (before the question), or with ``new_docs=after`` in a
        follow-up turn after the answer so far (:meth:`PromptTemplate.render_followup`).
        """
        s = self.run.settings
        if self._follow_up(new):
            prompt = self.template.render_followup(docs, new, self.run.question, self.run.answer_so_far)
        else:
            prompt = self.template.render([*docs, *new], self.run.question, self.run.answer_so_far)
        cap = max_tokens or lookahead_tokens(s, self.template.language)
        budget = min(cap, s.max_output_tokens - self.run.output_tokens)
        n = repeat_words(s, self.template.language)

        # Asked after every token: the watches read only what was added since the last call.
        ended, repeated = SentenceWatch(), RepeatWatch(n)

        def stop_when(text: str) -> bool:
            return ended(text) or (n > 0 and repeated(text))

        return self.lm.complete(prompt, max_tokens=max(budget, 1), stop=self.template.stop, stop_when=stop_when)

    def _follow_up(self, new: Sequence[Passage]) -> bool:
        """Do ``new`` passages go in a follow-up turn (``new_docs=after``) rather than before the question?"""
        return bool(new) and self.run.settings.new_docs == "after"

    def generate(self, docs: Sequence[Passage], stage: str, *, new: Sequence[Passage] = ()) -> Piece:
        """The next sentence written from ``docs`` (and ``new``, see :meth:`complete`); ``stage``
        names its timing in the trace.

        A sentence in which the model starts repeating a run of ``repeat_ngram`` words is cut
        before the repeat and marked ``looped`` (the loop then ends the answer after it).
        """
        t0 = time.perf_counter()
        piece = first_piece(self.complete(docs, new=new))
        if self._follow_up(new):
            # The follow-up turn is asked for one sentence: its end is that turn's, not the
            # answer's. The next draft, from the answer's own prompt, says whether it goes on.
            piece = replace(piece, model_done=False)
        self.record.timings[stage] = round(time.perf_counter() - t0, 4)
        n = repeat_words(self.run.settings, self.template.language)
        at = repeated_ngram(piece.text, n) if n > 0 else None
        if at is not None:
            text = piece.text[:at].rstrip(" ,;:、，；")
            shift = len("".join(t.text for t in piece.tokens)) - len(piece.text)  # leading space
            piece = Piece(text, tuple(cut_tokens(piece.tokens, shift + len(text))), False, False, True)
        return piece

    def check(self, piece: Piece, docs: Sequence[Passage], *, coverage: float | None = None) -> Support:
        """The support checker's verdict on ``piece`` against ``docs`` (C5), recorded in the trace.

        ``coverage`` is the share of the claims' weight that must be backed: the support
        trigger's ``support_coverage`` unless given (verification passes ``verify_coverage``).

        With ``evidence_lift`` and a backend that can score, the sentence is also scored without
        the documents, after the same question and answer so far (a prompt the draft context has
        cached), and the difference from its tokens' probabilities with the documents (those it
        was generated with) is the evidence lift of each claim.
        """
        s, rec = self.run.settings, self.record
        lift = None
        if docs and s.evidence_lift and self.lm.supports_scoring and piece.tokens:
            t0 = time.perf_counter()
            prompt = self.template.render([], self.run.question, self.run.answer_so_far)
            without = self.lm.score(prompt, "".join(t.text for t in piece.tokens))
            lift = claim_lift(piece.text, piece.tokens, without.tokens)
            rec.timings["verify"] = round(rec.timings.get("verify", 0.0) + time.perf_counter() - t0, 4)
        context = [self.run.question, *(s.text for s in self.run.sentences)]
        thresholds = replace(SUPPORT, supported=s.support_coverage if coverage is None else coverage)
        verdict = check_support(piece.text, docs, lift=lift, context=context, thresholds=thresholds)
        leaked = tuple(n for n in exemplar_leaks(piece.text, self.template.header, self.run.question, docs)
                       if not self._in_corpus(n))  # fmt: skip
        if leaked:
            verdict = Support("unsupported", (), leaked, 0.0, verdict.lift, verdict.claims, verdict.details)
        rec.support = verdict.label
        rec.unsupported = list(verdict.unsupported)
        rec.coverage, rec.lift, rec.leaked = verdict.coverage, verdict.lift, list(leaked)
        rec.claims, rec.evidence = list(verdict.details), [p.id for p in docs]
        return verdict

    def _in_corpus(self, name: str) -> bool:
        """Does a passage the caller may see name ``name``? Then it is not the exemplars' alone.

        "United Kingdom" in an exemplar and in an answer is common knowledge when the corpus
        names it too; "Angara" from the Lake Baikal exemplar, in an answer about a corpus that
        never names it, can only come from the exemplar. One search under the run's filters (so
        a hidden passage never changes the outcome); not counted as a retrieval of the answer.
        """
        hits = self.retriever.search(name, k=1, filters=self.run.filters)
        return any(fold(name) in fold(f"{h.passage.title} {h.passage.text}") for h in hits)

    def relevance(self, query: str, docs: Sequence[Passage]) -> float:
        """How much of ``query``'s content the documents back (0..1): the checker's coverage."""
        verdict = check_support(query, docs)
        return 1.0 if verdict.label == "no_claims" else verdict.coverage

    def search(self, queries: Sequence[str], *, exclude: Collection[str] = (), k: int | None = None,
               own_pages: Sequence[str] | None = None) -> list[Hit]:  # fmt: skip
        """Search every query under the run's filters and interleave the rankings.

        Each query counts as one retrieval and gives the settings' ``k`` hits in all, or ``k``
        each when given. Passages whose ids are in ``exclude`` (those a draft was already written
        from) are skipped, so the hits are new ones. ``own_pages`` gives a name for each query: a
        query whose best match is one of them *and* that name's own page (see :func:`titled`)
        keeps only the rest of that page (the hits with its title): what it looks for is already
        read, and the rest are other entities that share its words. The trace lists that match as
        ``known``. A hit that fails the filters (a retriever bug) is never passed on: the run fails
        loudly instead.
        """
        run = self.run
        t0 = time.perf_counter()
        each = k or run.settings.k
        rankings = []
        for i, q in enumerate(queries):
            found = self.retriever.search(q, k=each + len(exclude), filters=run.filters)
            hits = [h for h in found if h.passage.id not in exclude][:each]
            best = found[0].passage if found else None
            if own_pages is not None and best is not None and best.id in exclude and titled(best, own_pages[i]):
                self.record.known.append(best.id)
                hits = [h for h in hits if h.passage.title == best.title]
            for h in hits:
                if not run.filters.matches(h.passage.meta):
                    raise RetrieverError(
                        f"retriever {self.retriever.name!r} returned passage {h.passage.id!r} "
                        "outside the request's filters; it was withheld",
                        "this is a retriever bug: filters must be applied inside the search",
                    )
            rankings.append(hits)
            run.retrievals += 1
        merged = interleave(rankings, run.settings.k if k is None else k * len(queries))
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

    def with_cited(self, docs: Sequence[Passage]) -> list[Passage]:
        """``docs``, then the passages the answer already cites that ``docs`` lack.

        A sentence is checked against both: one that restates or sums up earlier sentences ("So
        the answer is ...") is backed by the passages they cite, and needs no search to find
        them again. Every one of them was retrieved under the run's filters.
        """
        have = {d.id for d in docs}
        cited = [Passage(c.passage_id, c.text, c.title) for c in self.run.sources.values() if c.passage_id not in have]
        return [*docs, *cited]

    @property
    def retrievals_left(self) -> int:
        return self.run.settings.max_retrievals - self.run.retrievals

    def capped(self, piece: Piece, cap: RetrievalCap) -> Commit:
        """A budget forbids retrieving: keep the sentence, flagged as ungrounded (C2)."""
        self.run.note_cap(cap)
        self.record.decision = _CAP_DECISIONS[cap]
        return Commit(piece, grounded=False)


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
                return Commit(ctx.generate(docs, "generate"), docs, retrieved=True, grounded=bool(docs))
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
        return Commit(ctx.generate([], "generate"), retrieved=False, grounded=False)
    ctx.run.first_docs = [h.passage for h in hits]
    ctx.record.decision = "retrieve"
    return Commit(ctx.generate(ctx.run.first_docs, "generate"), ctx.run.first_docs, retrieved=True)


def first_piece(completion: Completion) -> Piece:
    """Cut the first sentence (and exactly its tokens) out of a completion.

    A sentence that ``max_tokens`` cut before its end is ``truncated`` and ``cut``, and loses its
    last word, which may be partial (a query or a commit must never hold half a name).
    """
    text = completion.text
    end = first_sentence_end(text, final=completion.finish_reason != "sentence")
    if end is None:
        end = len(text)
    truncated = completion.finish_reason == "length" and end >= len(text.rstrip()) and not ends_complete(text[:end])
    if truncated:
        end = whole_words_end(text[:end])
    tokens = cut_tokens(completion.tokens, end)
    rest = text[end:]
    done = completion.finish_reason == "stop" and not rest.strip()
    return Piece(text[:end].strip(), tuple(tokens), done, truncated, cut=truncated)


def cut_tokens(tokens: Sequence[TokenLogprob], end: int) -> list[TokenLogprob]:
    """The tokens spelling the first ``end`` characters (a token cut in two keeps its logprob)."""
    out: list[TokenLogprob] = []
    pos = 0
    for tok in tokens:
        if pos >= end:
            break
        take = tok.text[: end - pos]
        out.append(tok if take == tok.text else TokenLogprob(take, tok.logprob))
        pos += len(tok.text)
    return out


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


def titled(passage: Passage, name: str) -> bool:
    """Whether ``passage`` is ``name``'s own page: its title, less a parenthesis ("Detroit (film)"),
    says the same content words as the name."""
    title = content_words(re.sub(r"\([^)]*\)", " ", passage.title))
    return bool(title) and title == content_words(name)
