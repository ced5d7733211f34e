"""Verified output (C5, C6): every sentence is checked against its passages before it is accepted.

What happens to a sentence the support checker (:mod:`flare.verify.support`) does not pass
depends on ``Settings.verify``; the checker's coverage here is ``Settings.verify_coverage``
(a draft the support trigger kept passed ``support_coverage``, and is checked again only when
``verify_coverage`` is the stricter):

* ``flag`` — it is accepted, marked: it cites only the passages that back part of it, and its
  unbacked spans travel with it to every output;
* ``drop`` — it is removed before acceptance, so no stream ever carries it;
* ``retry`` — one more search, with the question and the unbacked spans as the query, and one
  rewrite from what it finds plus the sentence's own passages; if the rewrite still does not pass,
  ``retry_then`` (``flag`` or ``drop``) decides.

A sentence naming something that only the prompt's exemplars contain is never shown: it is
dropped (after a retry, in ``retry`` mode) whatever the mode.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace

from flare.engine.events import Event, Rewriting, Searching
from flare.engine.step import Commit, StepContext, dedupe
from flare.text import join_words


def verify(ctx: StepContext, commit: Commit) -> Generator[Event, None, Commit | None]:
    """The commit to accept (its ``support`` set), or None when the sentence must be dropped."""
    s, rec = ctx.settings, ctx.record
    if commit.support is None:
        docs = ctx.with_cited(commit.docs)
        commit = replace(commit, docs=docs, support=ctx.check(commit.piece, docs, coverage=s.verify_coverage))
    elif s.verify_coverage > s.support_coverage:  # a draft the trigger kept, held to the stricter test
        commit = replace(commit, support=ctx.check(commit.piece, commit.docs, coverage=s.verify_coverage))
    assert commit.support is not None
    if commit.support.passes:
        rec.verify = "pass"
        return commit
    if s.verify == "retry" and ctx.retrievals_left > 0:
        rec.verify = "retry>"
        retried = yield from _retry(ctx, commit)
        if retried is not None:
            assert retried.support is not None
            if retried.support.passes:
                rec.verify += "pass"
                return retried
            commit = retried
    action = s.retry_then if s.verify == "retry" else s.verify
    if action == "drop" or rec.leaked:
        rec.verify += "drop"
        return None
    rec.verify += "flag"
    return commit


def _retry(ctx: StepContext, commit: Commit) -> Generator[Event, None, Commit | None]:
    """Search with the question and the unbacked spans; rewrite the sentence from the hits."""
    assert commit.support is not None
    query = join_words([ctx.run.question, *commit.support.unsupported])
    yield Searching(ctx.index, 1)
    hits = ctx.search([query])
    if not hits:
        return None
    docs = dedupe([h.passage for h in hits] + list(commit.docs))
    yield Rewriting(ctx.index)
    piece = ctx.generate(docs, "retry")
    if not piece.text:
        return None
    ctx.record.rejected.append(commit.piece.text)
    return Commit(piece, docs, retrieved=True, support=ctx.check(piece, docs, coverage=ctx.settings.verify_coverage))
