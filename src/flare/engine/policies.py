"""Retrieval policies: *when* and *with what* each method retrieves, over one shared loop.

A policy produces one sentence per call of :meth:`~flare.engine.step.Policy.step`, using only
:class:`~flare.engine.step.StepContext` (generate, search, capped). Prompts, exemplars, ``k``
and the documents format are the loop's, so methods differ only in their retrieval decisions
(M9). Register a new method with :func:`flare.engine.methods.register_policy`.

Built in:

* ``flare`` — FLARE direct (M1–M5, M10).
* ``single`` — retrieve once with the question, keep those documents for every sentence.
* ``none`` — never retrieve.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Sequence
from dataclasses import replace

from flare.engine.ending import draft_end
from flare.engine.events import Event, Rewriting, Searching
from flare.engine.judge import judge
from flare.engine.step import OMIT, Commit, Outcome, Piece, StepContext, StepGen, dedupe, initial_step
from flare.query.explicit import ask_questions, low_spans
from flare.query.implicit import masked_query
from flare.text import content_words, fold, join_words, split_sentences, words
from flare.types import Hit, Passage, Sentence, TokenLogprob
from flare.verify.support import Claim, Support, claims, subject

MIN_QUERY_WORDS = 2  # fewer content words than this and a masked draft is not a query
MAX_HOPS = 2  # names a draft's best passage lends to hop queries (see hop_queries)
# Capitalised, but a date's part, not an entity to hop to.
CALENDAR = frozenset("""
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday
""".split())  # noqa: SIM905 - a word list reads better as text


class NoRetrieval:
    """Never retrieve: the model answers from what it knows."""

    name = "none"
    needs_logprobs = False

    def step(self, ctx: StepContext) -> StepGen:
        ctx.record.kind, ctx.record.decision = "generate", "generate"
        return Commit(ctx.generate([], "generate"))
        yield  # pragma: no cover - makes this a generator


class SingleRetrieval:
    """Retrieve once with the question; every sentence is written from those documents."""

    name = "single"
    needs_logprobs = False

    def step(self, ctx: StepContext) -> StepGen:
        if ctx.index == 0:
            return (yield from initial_step(ctx))
        ctx.record.kind, ctx.record.decision = "generate", "generate"
        docs = ctx.run.first_docs
        return Commit(ctx.generate(docs, "generate"), docs)


class FlareDirect:
    """FLARE direct: draft without documents, retrieve and regenerate only when unsure."""

    name = "flare"

    def __init__(self, *, needs_logprobs: bool = True) -> None:
        # The evidence trigger (trigger=support) reads no token probabilities; the others do.
        self.needs_logprobs = needs_logprobs

    def step(self, ctx: StepContext) -> StepGen:
        s, rec = ctx.settings, ctx.record
        by_support = s.trigger == "support"
        if ctx.index == 0:
            first = yield from initial_step(ctx)
            if not (by_support and isinstance(first, Commit) and first.retrieved and first.piece.text):
                return first
            # The evidence trigger treats the first sentence as a draft too: it was written from
            # the question's documents, and a bridge ("the founder of X was born in ...") is
            # exactly what they do not back. Kept if they back it, searched for if not.
            piece, base = first.piece, list(first.docs)
            _record_draft(ctx, piece)
            support = ctx.check(piece, base)
            if support.passes:
                return Commit(piece, base, retrieved=True, support=support)
            rec.draft_rejected()
            return (yield from self._rewrite(ctx, piece, base, _unbacked(support)))
        base = ctx.run.first_docs if s.keep_first_docs or by_support else []
        if by_support and s.follow_names:
            follows = follow_queries(ctx)
            if follows and (s.draft_before_follow or s.lazy_follow):
                early = self._draft_before_follow(ctx, [*base, *ctx.run.followed], lazy=s.lazy_follow)
                if early is not None:
                    if not s.lazy_follow:  # lazy: the names wait for a sentence that needs them
                        ctx.run.followed_upto = len(ctx.run.sentences)
                    return early
            ctx.run.followed_upto = len(ctx.run.sentences)  # a step that adds no sentence searches nothing again
            base = [*base, *(yield from follow_names(ctx, follows))]
        piece = ctx.generate(base, "draft")
        _record_draft(ctx, piece)
        if not piece.text:  # the model ends the answer: accepted if sure, looked up if not
            return (yield from draft_end(ctx, piece, base))
        unbacked: frozenset[str] = frozenset()
        verdict = judge(piece.text, piece.tokens, s)  # with trigger=support: for the trace only
        rec.low_tokens = [(t, round(p, 4)) for t, p in verdict.low_tokens]
        rec.threshold = verdict.threshold
        if by_support:
            # Evidence, not confidence (C6): keep a draft its documents (or the passages the
            # answer cites) back; otherwise search without the names and numbers they do not
            # back (the likely guesses). Unbacked common words stay: they say what the missing
            # fact is about ("lamp", "burned").
            evidence = ctx.with_cited(base)
            support = ctx.check(piece, evidence)
            if support.passes:
                rec.decision = "accept"
                return Commit(piece, evidence, support=support)
            rec.draft_rejected()
            unbacked = _unbacked(support)
        else:
            if not verdict.retrieve:
                rec.decision = "accept"
                return Commit(piece, base)
        return (yield from self._rewrite(ctx, piece, base, unbacked))

    @staticmethod
    def _draft_before_follow(ctx: StepContext, base: list[Passage], *, lazy: bool) -> Commit | None:
        """``draft_before_follow`` and ``lazy_follow``: the next sentence, drafted before the search
        for new names.

        Kept, with no search, when its documents or cited passages back it and it only repeats
        names and numbers the answer has said ("So the answer is Detroit." after "She died in
        Detroit."): the names' passages would add nothing it says. A one-sentence answer must also
        say every word of the question first: "So the answer is Lotes Nalshulok." after "Fuzote
        Labs was founded by Lotes Nalshulok." skips the hop the question asks for (where he was
        born). With ``lazy``, a backed draft that states something new is kept as well: the
        passages at hand already hold it.

        Otherwise ``None``: the draft is dropped (its text stays in the trace as ``predraft``).
        """
        piece = ctx.generate(base, "predraft")
        run = ctx.run
        if not piece.text or piece.cut or piece.looped:
            keep = False
        elif lazy and not restates(piece.text, run.sentences):
            keep = True
        else:
            keep = repeats_answer(piece.text, run.question, run.sentences)
        if keep:
            evidence = ctx.with_cited(base)
            support = ctx.check(piece, evidence)
            if support.passes:
                _record_draft(ctx, piece)
                ctx.record.decision = "accept"
                return Commit(piece, evidence, support=support)
            ctx.record.clear_verdict()
        ctx.record.predraft = piece.text
        return None

    @staticmethod
    def _rewrite(ctx: StepContext, piece: Piece, base: list[Passage], unbacked: frozenset[str]) -> StepGen:
        """Search for what ``piece`` is unsure of (or its documents lack) and write it again."""
        s, rec = ctx.settings, ctx.record
        by_support = s.trigger == "support"
        queries = form_queries(ctx, piece, drop=unbacked)
        if base and by_support:
            queries += hop_queries(ctx, piece, base, queries[0] if queries else "", unbacked)
        if ctx.retrievals_left <= 0:
            return ctx.capped(piece, "max_retrievals")
        queries = queries[: ctx.retrievals_left]
        if ctx.run.count_gap(gap_words(ctx, queries)) > s.max_retries_per_gap:
            return ctx.capped(piece, "max_retries_per_gap")
        yield Searching(ctx.index, len(queries))
        # The support trigger's draft was written from ``base`` and they do not back it: search
        # for other passages. Finding none, it keeps the draft (the same prompt would write it).
        seen = {d.id for d in base} | ctx.run.sources.keys() if by_support else set()
        hits = ctx.search(queries, exclude=seen)
        if not hits and ctx.retrievals_left > 0 and not s.query_with_question:
            # A masked draft can be all filler ("village is in the region of"): before giving
            # up, ask with the question plus the draft's confident words.
            fallback = join_words([ctx.run.question, masked_query(piece.tokens, s.beta)])
            queries.append(fallback)
            hits = ctx.search([fallback], exclude=seen)
        if not hits and not seen:
            rec.decision = "no_evidence"
            return missing(ctx, piece)
        found = read_found(ctx, hits, queries)
        if found and s.conditional_commit and ctx.relevance(" ".join(queries), found) < s.min_relevance:
            rec.decision = "irrelevant"
            return Commit(piece, retrieved=True, grounded=False)
        # The documents the draft was written from come first, the new ones after them: the
        # rewrite's prompt then starts as the draft's did, and the model's cache of that prefix
        # (instructions and first documents) is used again instead of evaluated anew.
        docs = dedupe(list(base) + found)
        rec.decision = "retrieve"
        if len(docs) == len(base):
            return Commit(piece, docs, retrieved=True)  # nothing new: the same prompt writes the same sentence
        yield Rewriting(ctx.index)
        if by_support:
            return Commit(ctx.generate(base, "regenerate", new=docs[len(base):]), docs, retrieved=True)
        return Commit(ctx.generate(docs, "regenerate"), docs, retrieved=True)


def hop_queries(ctx: StepContext, piece: Piece, base: Sequence[Passage], query: str,
                unbacked: frozenset[str] = frozenset()) -> list[str]:  # fmt: skip
    """Queries through the entity a draft describes but does not name: the hop to a bridge.

    "The company that makes the Seserlo bicycle has its head office in Genbalir." is not backed,
    and its own words find the bicycle's passages again. The passage that matches the draft best
    names the maker ("The Seserlo bicycle is made by Zendek Textiles."): its names that neither
    the question, the answer so far nor the draft say, with the draft's words that passage lacks
    ("Zendek Textiles head office"), find the maker's own passages. At most :data:`MAX_HOPS`.
    The best passage names the draft's subject and shares most of its backed words.
    """
    known = content_words(f"{ctx.run.question} {ctx.run.answer_so_far} {piece.text}")
    drafted = content_words(piece.text) - unbacked
    about = subject(piece.text, [ctx.run.question, *(x.text for x in ctx.run.sentences)])

    said = [content_words(f"{p.title} {p.text}") for p in base]
    best, have = max(zip(base, said, strict=True), key=lambda ps: (len(about & ps[1]), len(drafted & ps[1])))
    lacking = content_words(query) - have
    rest = [w for w in words(query) if fold(w) in lacking]
    out: list[str] = []
    for name in names_in(best.text):
        if len(out) == MAX_HOPS:
            break
        if not content_words(name) & known:
            out.append(join_words([name, *rest]))
    return out


def follow_queries(ctx: StepContext) -> list[tuple[str, str]]:
    """The searches :func:`follow_names` makes for the sentences no step has searched for yet: the
    last one, or with ``lazy_follow`` every one since the last search.

    One per new name of those sentences (one the question and the sentences before do not say, at
    most :data:`MAX_HOPS`), each with the question's words they lack: (name, query) pairs.
    """
    run = ctx.run
    if len(run.sentences) <= run.followed_upto or ctx.retrievals_left <= 0:
        return []
    last = " ".join(x.text for x in run.sentences[run.followed_upto :])  # more than one with lazy_follow
    known = content_words(" ".join([run.question, *(x.text for x in run.sentences[: run.followed_upto])]))
    lacking = content_words(run.question) - content_words(last)
    rest = [w for w in words(run.question) if fold(w) in lacking]
    names = [n for n in names_in(last) if not content_words(n) & known][:MAX_HOPS]
    return [(n, join_words([n, *rest])) for n in names][: ctx.retrievals_left]


def follow_names(ctx: StepContext, follows: Sequence[tuple[str, str]]) -> Generator[Event, None, list[Passage]]:
    """The passages found so far for names the answer brought in (with ``follow_names``).

    A sentence that names what the question only describes ("The performer of the song was
    Aretha Franklin.") is backed by the question's documents, and then nothing would look up
    the named one's own passage, which holds the next hop (where she died). Each new name
    (``follows``, from :func:`follow_queries`) is searched with the question's words the sentence
    lacks ("Aretha Franklin place death"), past the passages already in the prompt; the best
    ``follow_k`` passages of each (see :func:`read_found`) join every later draft's documents.
    With ``skip_known_names``, a name whose own page (the passage titled by it) is its best match
    and already among them reads only the rest of that page: the next best matches are other
    entities that share a word of its name.
    """
    run, s = ctx.run, ctx.settings
    if follows:
        queries = [q for _, q in follows]
        yield Searching(ctx.index, len(queries))
        seen = {d.id for d in [*run.first_docs, *run.followed]}
        own = [n for n, _ in follows] if s.skip_known_names else None
        hits = ctx.search(queries, exclude=seen, k=s.follow_k, own_pages=own)
        run.followed.extend(read_found(ctx, hits, queries))
    return run.followed


def read_found(ctx: StepContext, hits: Sequence[Hit], queries: Sequence[str]) -> list[Passage]:
    """The passages of ``hits`` as a prompt reads them: whole, or their :func:`excerpt` with ``trim_found``.

    With ``found_floor``, a hit scoring below that share of the best hit is not read; the trace
    records it as ``unread``. The best hit is always read.
    """
    floor = ctx.settings.found_floor * max((h.score for h in hits), default=0.0)
    if floor > 0:
        ctx.record.unread.extend(h.passage.id for h in hits if h.score < floor)
        hits = [h for h in hits if h.score >= floor]
    if ctx.settings.trim_found:
        return [excerpt(h.passage, queries, most=ctx.settings.trim_sentences) for h in hits]
    return [h.passage for h in hits]


def restates(text: str, said: Sequence[Sentence]) -> bool:
    """Does ``text`` state no name or number that the sentences ``said`` do not?"""
    known = content_words(" ".join(x.text for x in said))
    return all(content_words(c.text) <= known for c in claims(text) if c.kind != "word")


def repeats_answer(text: str, question: str, said: Sequence[Sentence]) -> bool:
    """Does ``text`` state only names and numbers (at least one) that the sentences ``said`` state?

    With one sentence said, that sentence and ``text`` must also say every content word of the
    question (a word counts when its first four letters do): the answer then has not stopped
    at the bridge of a two-hop question.
    """
    if not said or all(c.kind == "word" for c in claims(text)) or not restates(text, said):
        return False
    if len(said) > 1:
        return True
    have = {w[:4] for w in content_words(f"{said[0].text} {text}")}
    return all(w[:4] in have for w in content_words(question))


def excerpt(passage: Passage, queries: Sequence[str], *, most: int = 0) -> Passage:
    """``passage`` cut to its first sentence and the sentences sharing a content word with ``queries``.

    With ``most`` > 0, at most that many of the others are kept: those sharing the most words,
    the earlier on a tie. A passage of one or two sentences, or one whose every sentence is kept,
    is returned unchanged; cuts are marked with " … ". The id stays the passage's: citations
    point at it.
    """
    sentences = split_sentences(passage.text)
    if len(sentences) <= 2:
        return passage
    asked = content_words(" ".join(queries))
    shared = [len(content_words(x) & asked) for x in sentences]
    ranked = sorted((i for i in range(1, len(sentences)) if shared[i]), key=lambda i: -shared[i])
    chosen = {0, *ranked[: most or None]}
    keep = [i in chosen for i in range(len(sentences))]
    if all(keep):
        return passage
    parts: list[str] = []
    for i, (x, kept) in enumerate(zip(sentences, keep, strict=True)):
        if kept:
            parts.append(x if i == 0 or keep[i - 1] else f"… {x}")
    text = " ".join(parts) + ("" if keep[-1] else " …")
    return replace(passage, text=text)


def names_in(text: str) -> list[str]:
    """The names ``text`` states, in order, each run of capitalised words as one ("Zendek Textiles")."""
    out: list[str] = []
    run: list[Claim] = []
    for c in [*claims(text), None]:
        if c is not None and c.kind == "name" and (not run or text[run[-1].end : c.start] == " "):
            run.append(c)
            continue
        if run and not (len(run) == 1 and fold(run[0].text) in CALENDAR):
            out.append(text[run[0].start : run[-1].end])
        run = [c] if c is not None and c.kind == "name" else []
    return list(dict.fromkeys(out))


def _record_draft(ctx: StepContext, piece: Piece) -> None:
    ctx.record.draft = piece.text
    ctx.record.draft_tokens = [(t.text, round(t.prob, 4)) for t in piece.tokens]


def _unbacked(support: Support) -> frozenset[str]:
    """The folded names and numbers a support verdict found in no document: the draft's guesses."""
    guesses = " ".join(claim for claim, kind, found, _ in support.details if kind != "word" and not found)
    return frozenset(content_words(guesses))


def missing(ctx: StepContext, piece: Piece) -> Outcome:
    """C3: nothing was found for this sentence's gap — stop, skip the sentence, or keep it marked."""
    on_missing = ctx.settings.on_missing
    if on_missing == "stop":
        return "no_evidence"
    if on_missing == "omit":
        ctx.record.decision = "omit"
        return OMIT
    return Commit(piece, grounded=False)


def gap_words(ctx: StepContext, queries: list[str]) -> frozenset[str]:
    """What a gap is about: the queries' content words that the question does not already say."""
    asked = content_words(ctx.run.question)
    return frozenset(w for q in queries for w in content_words(q) if w not in asked)


def form_queries(ctx: StepContext, piece: Piece, *, drop: frozenset[str] = frozenset()) -> list[str]:
    """Search queries for an unsure draft: M3 masking (implicit) or M4 questions (explicit).

    ``drop`` are folded words to leave out of a masked query as well (the support trigger's
    unbacked words). Words the question or the answer so far already state are never masked or
    dropped (they are known, not guessed), and a query that lost the name the sentence is about
    gets it back: "The company has its head office in Mulbirna" searched as "has its head office
    in" finds any company's office, with the company's name it finds that company's.
    """
    s = ctx.settings
    known = content_words(f"{ctx.run.question} {ctx.run.answer_so_far}")
    drop = drop - known
    queries: list[str] = []
    # A model without logprobs gives no tokens: every word of its draft counts as sure.
    tokens = piece.tokens if piece.tokens or not piece.text else (TokenLogprob(piece.text, 0.0),)
    if s.query == "explicit":
        spans = low_spans(tokens, s.beta)
        if spans:
            t0 = time.perf_counter()
            context = f"{ctx.run.answer_so_far} {piece.text}".strip()
            queries = ask_questions(ctx.lm, ctx.run.question, context, spans, language=ctx.template.language)
            ctx.record.timings["questions"] = round(time.perf_counter() - t0, 4)
    masked = _without(masked_query(tokens, s.beta, keep=known), drop)
    if not queries:
        usable = len(content_words(masked)) >= MIN_QUERY_WORDS
        queries = [_with_subject(ctx, piece.text, masked, drop)] if usable else []
    # A draft whose confident part is only function words ("He is a ... in the ...") gives no
    # usable query; the question then carries the search, with whatever the draft kept.
    if s.query_with_question or not queries:
        kept = queries or ([masked] if content_words(masked) else [""])
        queries = [f"{ctx.run.question} {q}".strip() for q in kept]
    return queries


def _with_subject(ctx: StepContext, sentence: str, query: str, drop: frozenset[str]) -> str:
    """``query`` with the words of the name ``sentence`` is about put first, when it lacks them."""
    context = [ctx.run.question, *(x.text for x in ctx.run.sentences)]
    about = subject(sentence, context) - drop
    have = {fold(w) for w in words(query)}
    spelt = {fold(w): w for text in [*context, sentence] for w in words(text)}  # as the text writes it
    lacking = [spelt.get(w, w) for w in sorted(about) if w not in have]
    return join_words([*lacking, query]) if lacking else query


def _without(query: str, drop: frozenset[str]) -> str:
    if not drop:
        return query
    return join_words(w for w in words(query) if fold(w) not in drop)
