"""The end of an answer is a drafted token too (M1, M2): an unsure end is looked up, not accepted.

FLARE drafts each later sentence without documents. A draft that is empty means the model chose
to end its answer there — by writing the end of the line, which the backend cuts as a stop
sequence, so its probability never reached the trigger. Small models end early when they lose
sight of the documents: Gemma-3-270m, after a first sentence copied from a policy passage, gave
the end of the line p = 0.15–0.48 without documents and often p = 0.01 with them (dev questions of
``benchmarks/qinglan-zh``), so every FLARE answer stopped after one sentence while the documents
had more to say. Under the paper's rule an end with p < θ is an unsure token like any other.

:func:`draft_end` scores the layout's end of line after the draft prompt (a cached prefix: one
token to evaluate) and, when it is below the threshold, searches with the question (the empty
draft leaves nothing to mask) and regenerates the sentence from what is found; the model then
goes on, or ends with the documents in view. Backends that cannot score, layouts whose answer does
not end at a newline (ChatML ends a turn with a special token), θ=0 and the ``content`` and
``support`` triggers keep the end as drafted, and so does ``Settings(judge_end=False)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from flare.engine.events import Rewriting, Searching
from flare.engine.step import Commit, Piece, StepContext, StepGen, dedupe
from flare.types import Passage

END = "\n"
END_TOKEN = "<end>"  # how the end shows among a step's low tokens in the trace


def end_probability(ctx: StepContext, docs: Sequence[Passage]) -> float | None:
    """The probability that the model ends its answer right after the answer so far, or None
    when the backend cannot score or the layout does not end an answer with a newline."""
    if not ctx.lm.supports_scoring or not ctx.template.stop or ctx.template.stop[0] != END:
        return None
    prompt = ctx.template.render(docs, ctx.run.question, ctx.run.answer_so_far)
    scored = ctx.lm.score(prompt, END)
    if not scored.tokens:
        return None
    return math.exp(sum(t.logprob for t in scored.tokens))


def draft_end(ctx: StepContext, piece: Piece, base: Sequence[Passage]) -> StepGen:
    """Decide on an empty draft: end the answer, or (an unsure end) retrieve and regenerate."""
    s, rec = ctx.settings, ctx.record
    rec.decision = "end"
    if not s.judge_end or s.theta <= 0 or s.trigger in ("content", "support") or ctx.retrievals_left <= 0:
        return Commit(piece)
    p = end_probability(ctx, base)
    threshold = s.theta_prose if s.trigger == "dynamic" else s.theta
    if p is None:
        return Commit(piece)
    rec.threshold = threshold
    if p >= threshold and threshold < 1.0:
        return Commit(piece)
    rec.low_tokens = [(END_TOKEN, round(p, 4))]
    yield Searching(ctx.index, 1)
    hits = ctx.search([ctx.run.question])
    if not hits:
        return Commit(piece)
    docs = dedupe([h.passage for h in hits] + list(base))
    rec.decision = "retrieve"
    yield Rewriting(ctx.index)
    return Commit(ctx.generate(docs, "regenerate"), docs, retrieved=True)
