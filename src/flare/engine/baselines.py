"""The paper's baselines and FLARE instruct as retrieval policies over the one loop (M8, M9).

Each class here decides only *when* to retrieve and *with what query*; prompts, exemplars, ``k``
and the documents block are the loop's (the template given to :class:`~flare.engine.loop.Flare`).
Two methods need the exemplars annotated in their own way: self-ask ``Follow up:`` questions for
``decompose`` and ``[Search(query)]`` tags for ``instruct``. The method table records that
style; flare's built-in template then carries those exemplars (:mod:`flare.engine.prompt_styles`)
and ``flare eval`` annotates the same questions and answers (:mod:`flare.evaluate.prompts`).

* ``previous_window`` — every ``window_tokens`` tokens (the paper's l=16), retrieve with the
  previous window (the question for the first window) and write the next window from the hits.
* ``previous_sentence`` — before every sentence, retrieve with the previous sentence (IRCoT-like).
* ``decompose`` — self-ask: when the model writes ``Follow up: <question>``, retrieve with that
  question and write the next sentence (the intermediate answer) from the hits.
* ``instruct`` — FLARE instruct (M8): the model writes ``[Search(query)]`` when it wants facts;
  generation stops there, the query is searched, the tag is dropped and the sentence goes on from
  the new documents. ``[`` gets a +2.0 logit bias, and is forbidden for a few tokens after a
  search so that the model does not search again at once.

FLARE with θ=1 ("forward-looking every sentence") needs no code: it is ``flare`` with ``theta=1``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from functools import partial

from flare.engine.events import Event, Rewriting, Searching
from flare.engine.sentences import lookahead_tokens
from flare.engine.step import Commit, Piece, StepContext, StepGen, cut_tokens, first_piece, initial_step
from flare.text import ends_sentence, first_sentence_end
from flare.types import Completion, FinishReason, Passage, TokenLogprob

SEARCH_TAG = re.compile(r"\[Search\((.*?)\)\]", re.DOTALL)
TAG_OPEN = "[Search("
FOLLOW_UP = "Follow up:"
SEARCH_BIAS = 2.0  # the paper's boost for "[" so the small model actually asks to search
FORBID_BIAS = -100.0  # "[" is effectively impossible for FORBID_TOKENS tokens after a search
FORBID_TOKENS = 4
MAX_SEARCHES_PER_SENTENCE = 2  # a model that tags every few tokens cannot loop forever


@dataclass(frozen=True, slots=True)
class Found:
    """What one search gave a step: its documents, and whether it ran and found anything."""

    docs: Sequence[Passage] = ()
    retrieved: bool = False
    grounded: bool = False


def _search_docs(ctx: StepContext, query: str) -> Generator[Event, None, Found]:
    """Search one query if the budget allows. Capped or empty searches leave the step ungrounded."""
    if ctx.retrievals_left < 1:
        ctx.run.note_cap("max_retrievals")
        ctx.record.decision = "cap:max_retrievals"
        return Found()
    yield Searching(ctx.index, 1)
    hits = ctx.search([query])
    ctx.record.decision = "retrieve" if hits else "no_evidence"
    return Found([h.passage for h in hits], True, bool(hits))


class PreviousSentence:
    """Retrieve before every sentence with the previous sentence as the query (IRCoT-like)."""

    name = "previous_sentence"
    needs_logprobs = False

    def step(self, ctx: StepContext) -> StepGen:
        if ctx.index == 0:
            return (yield from initial_step(ctx))
        ctx.record.kind = "previous"
        found = yield from _search_docs(ctx, ctx.run.sentences[-1].text)
        yield Rewriting(ctx.index)
        piece = ctx.generate(found.docs, "generate")
        return Commit(piece, found.docs, retrieved=found.retrieved, grounded=found.grounded)


class Decompose:
    """Self-ask: retrieve with each ``Follow up:`` question the model writes.

    The sentence after a follow-up question (its intermediate answer) is written from that
    question's documents; other sentences keep the latest documents.
    """

    name = "decompose"
    needs_logprobs = False

    def __init__(self) -> None:
        self.docs: Sequence[Passage] = ()

    def step(self, ctx: StepContext) -> StepGen:
        if ctx.index == 0:
            outcome = yield from initial_step(ctx)
            self.docs = ctx.run.first_docs
            return outcome
        previous = ctx.run.sentences[-1].text
        if not previous.startswith(FOLLOW_UP):
            ctx.record.kind, ctx.record.decision = "generate", "generate"
            return Commit(ctx.generate(self.docs, "generate"), self.docs)
        ctx.record.kind = "follow_up"
        found = yield from _search_docs(ctx, previous[len(FOLLOW_UP) :].strip())
        if found.retrieved:
            self.docs = found.docs
        piece = ctx.generate(found.docs, "generate")
        return Commit(piece, found.docs, retrieved=found.retrieved, grounded=found.grounded)


class PreviousWindow:
    """Retrieve every ``window_tokens`` tokens with the previous window as the query.

    A step writes one window (not a sentence): up to ``window_tokens`` tokens, ending early only
    when the model ends its answer. A window cut inside a word gives the partial word back, so
    every committed window ends between words.
    """

    name = "previous_window"
    needs_logprobs = False

    def step(self, ctx: StepContext) -> StepGen:
        ctx.record.kind = "initial" if ctx.index == 0 else "window"
        query = ctx.run.question if ctx.index == 0 else ctx.run.sentences[-1].text
        found = yield from _search_docs(ctx, query)
        if ctx.index == 0:
            ctx.run.first_docs = list(found.docs)
        t0 = time.perf_counter()
        s = ctx.settings
        prompt = ctx.template.render(found.docs, ctx.run.question, ctx.run.answer_so_far)
        budget = min(s.window_tokens, s.max_output_tokens - ctx.run.output_tokens)
        c = ctx.lm.complete(prompt, max_tokens=max(budget, 1), stop=ctx.template.stop)
        ctx.record.timings["generate"] = round(time.perf_counter() - t0, 4)
        return Commit(window_piece(c), found.docs, retrieved=found.retrieved, grounded=found.grounded)


def window_piece(c: Completion) -> Piece:
    """A completion as one window; a trailing partial word is dropped when it hit the length cap."""
    tokens = list(c.tokens)
    if c.finish_reason == "length":
        starts = [i for i, t in enumerate(tokens) if i > 0 and t.text[:1].isspace()]
        if starts:
            tokens = tokens[: starts[-1]]
    text = "".join(t.text for t in tokens) if c.tokens else c.text
    return Piece(text.strip(), tuple(tokens), c.finish_reason == "stop", c.finish_reason == "length")


class Instruct:
    """FLARE instruct (M8): the model asks for searches with ``[Search(query)]`` tags."""

    name = "instruct"
    needs_logprobs = False

    def __init__(self) -> None:
        self.docs: Sequence[Passage] = ()

    def step(self, ctx: StepContext) -> StepGen:
        ctx.record.kind = "instruct"
        retrieved = False
        if ctx.index == 0:
            found = yield from _search_docs(ctx, ctx.run.question)
            self.docs, retrieved = found.docs, found.retrieved
            ctx.run.first_docs = list(found.docs)
        t0 = time.perf_counter()
        written = _Written()
        biased = ctx.lm.supports_logit_bias
        searches, forbid, used = 0, 0, 0
        finish: FinishReason = "stop"
        while True:
            s = ctx.settings
            room = min(lookahead_tokens(s, ctx.template.language), s.max_output_tokens - ctx.run.output_tokens)
            room -= used
            if room < 1:
                finish = "length"
                break
            can_search = searches < MAX_SEARCHES_PER_SENTENCE and ctx.retrievals_left > 0
            c = self._write_on(ctx, written, room, forbid=forbid, can_search=can_search, biased=biased)
            forbid, finish, used = 0, c.finish_reason, used + c.generated_tokens
            tag = SEARCH_TAG.search(c.text)
            if tag is not None and first_sentence_end(written.text + c.text[: tag.start()]) is not None:
                tag = None  # the sentence ended before the tag: the tag belongs to the next sentence
            if tag is None:
                written.add(c)
                if finish == "length" and c.generated_tokens < room and not ends_sentence(written.text):
                    continue  # only the forbid window ended: go on writing the sentence
                break
            written.add_before(c, tag, biased=biased)
            searches += 1
            found = yield from _search_docs(ctx, tag.group(1).strip() or ctx.run.question)
            if found.retrieved and found.docs:
                self.docs, retrieved = found.docs, True
                yield Rewriting(ctx.index)
            forbid = FORBID_TOKENS
        ctx.record.timings["generate"] = round(time.perf_counter() - t0, 4)
        if not ctx.record.decision:
            ctx.record.decision = "generate"
        return Commit(written.piece(finish), self.docs, retrieved=retrieved)

    def _write_on(
        self, ctx: StepContext, written: _Written, room: int, *, forbid: int, can_search: bool, biased: bool
    ) -> Completion:
        """Continue the sentence from the current documents, up to a search tag or its end.

        ``[`` is boosted so that the model asks for searches, and forbidden for ``forbid`` tokens
        after one (or when no search is left); a backend without logit bias gets neither.
        """
        bias = {"[": FORBID_BIAS if forbid or not can_search else SEARCH_BIAS}
        prompt = ctx.template.render(self.docs, ctx.run.question, ctx.run.answer_so_far) + written.shown
        return ctx.lm.complete(
            prompt,
            max_tokens=min(room, forbid) if forbid else room,
            stop=ctx.template.stop,
            stop_when=partial(_instruct_stop, written.text),
            logit_bias=bias if biased else None,
        )


@dataclass(slots=True)
class _Written:
    """The sentence FLARE instruct is writing: its text and tokens without tags, and its prompt's view."""

    text: str = ""
    tokens: list[TokenLogprob] = field(default_factory=list)
    shown: str = ""  # what the prompt shows of it: with the tags already searched, if "[" cannot be forbidden

    def add(self, c: Completion) -> None:
        """Append a continuation that holds no search tag."""
        self.text, self.tokens, self.shown = self.text + c.text, self.tokens + list(c.tokens), self.shown + c.text

    def add_before(self, c: Completion, tag: re.Match[str], *, biased: bool) -> None:
        """Append what ``c`` wrote before its search ``tag``; the tag itself is dropped."""
        kept = c.text[: tag.start()].rstrip()
        self.text, self.tokens = self.text + kept, self.tokens + cut_tokens(c.tokens, len(kept))
        # Without logit bias the model would write the same tag again at once; showing it the
        # tag it already wrote lets it go on with the sentence instead (the paper forbids "[").
        self.shown = self.shown + kept if biased else f"{self.shown}{kept} {tag.group(0)}"

    def piece(self, finish: FinishReason) -> Piece:
        """The written sentence, without an unfinished tag a length cap left, as a :class:`Piece`."""
        text = _drop_open_tag(self.text)
        return first_piece(Completion(text, tuple(cut_tokens(self.tokens, len(text))), finish))


def _instruct_stop(before: str, generated: str) -> bool:
    """Stop at a closed search tag, or at a sentence end outside any open tag (``before`` has no tags)."""
    text = before + generated
    if SEARCH_TAG.search(generated):
        return True
    start = text.rfind("[")
    if start != -1 and "]" not in text[start:]:
        tail = text[start:]
        if tail.startswith(TAG_OPEN) or TAG_OPEN.startswith(tail):
            return ends_sentence(text[:start])  # inside a tag: only a sentence finished before it ends
    return ends_sentence(text)


def _drop_open_tag(text: str) -> str:
    """Remove an unfinished ``[Search(`` left by a length cap, and any complete tag."""
    text = SEARCH_TAG.sub("", text)
    start = text.rfind(TAG_OPEN)
    return text[:start].rstrip() if start != -1 else text
