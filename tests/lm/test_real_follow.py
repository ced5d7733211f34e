"""The round-6 follow options and the checker's coverage on the real path: SmolLM2, a tantivy index
on disk, the real loop.

``draft_before_follow``, ``trim_found`` and ``trim_sentences`` change what is searched and what the
model reads; the checks here hold whatever the small model writes: a skipped search is one the
kept sentence did not need, a dropped early draft is followed by the search, and a followed
passage reaches the prompt cut to its excerpt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flare.config import Settings
from flare.engine.loop import Flare
from flare.engine.policies import repeats_answer
from flare.lm.base import ForwardingLM
from flare.lm.llama import LlamaCppModel
from flare.retrieve.tantivy_index import TantivyRetriever, build_index
from flare.trace.schema import StepRecord
from flare.trace.tracers import MemoryTracer
from flare.types import Answer, Completion, Passage, Sentence
from flare.verify.support import Thresholds, decide

pytestmark = pytest.mark.model

BIO = ("Ada Pemberton was a Scottish engineer. She liked long walks by the sea. She kept bees. "
       "Ada Pemberton was born in Dunmore in 1809.")  # fmt: skip
PASSAGES = [
    Passage("br-1", "The Quillmere lighthouse was built in 1847 by the engineer Ada Pemberton.",
            "Quillmere lighthouse"),
    Passage("br-2", BIO, "Ada Pemberton"),
    Passage("br-3", "Dunmore is a fishing town on the Tay with a stone harbour.", "Dunmore"),
]
QUESTION = "Where was the engineer who built the Quillmere lighthouse born?"


class Recording(ForwardingLM):
    """The real model, keeping every prompt it was given."""

    def __init__(self, inner: LlamaCppModel) -> None:
        super().__init__(inner)
        self.prompts: list[str] = []

    def complete(self, prompt: str, **options: Any) -> Completion:
        self.prompts.append(prompt)
        return super().complete(prompt, **options)


def test_draft_before_follow_and_trim_found_with_the_real_model(smollm2: LlamaCppModel, tmp_path: Path) -> None:
    build_index(PASSAGES, tmp_path / "idx")
    lm, tracer = Recording(smollm2), MemoryTracer()
    settings = Settings(trigger="support", follow_names=True, draft_before_follow=True, trim_found=True, k=1,
                        max_sentences=3, verify="flag")  # fmt: skip
    Flare(lm, TantivyRetriever(tmp_path / "idx"), settings, tracer=tracer).answer(QUESTION)
    steps = tracer.traces[0].steps
    early = [s for s in steps if "predraft" in s.timings]
    assert early, [s.sentence for s in steps]  # the first sentence names Ada Pemberton: a later step drafts first
    for s in early:
        said = [Sentence(x.sentence, False) for x in steps[: s.index] if x.sentence]
        if s.predraft is None:  # kept: it repeats the answer, and nothing was searched
            assert not s.queries and repeats_answer(s.sentence, QUESTION, said)
        else:  # dropped: the names were searched for
            assert s.queries
    if any(r.id == "br-2" for s in steps[1:] for r in s.retrieved):  # her passage was followed: read cut
        read = [p for p in lm.prompts if "Scottish engineer" in p]
        assert read and all("long walks" not in p and "born in Dunmore" in p for p in read)


def test_found_floor_with_the_real_model(smollm2: LlamaCppModel, tmp_path: Path) -> None:
    # A surname page matches a name's search weakly (BM25 on a real index): below the floor it is
    # retrieved, recorded as unread, and in no prompt; every passage at or above it is read.
    surname = Passage("br-4", "Pemberton is a surname. Pemberton is also a town near Wigan.", "Pemberton")
    build_index([*PASSAGES, surname], tmp_path / "idx")
    lm, tracer = Recording(smollm2), MemoryTracer()
    settings = Settings(trigger="support", follow_names=True, found_floor=0.6, k=1, max_sentences=3, verify="flag")
    Flare(lm, TantivyRetriever(tmp_path / "idx"), settings, tracer=tracer).answer(QUESTION)
    steps = tracer.traces[0].steps
    for s in steps:  # a step may search twice (names, then a rewrite): each search has its own best
        found = s.retrieved[1:] if s.kind == "initial" else s.retrieved  # the question's document is read whole
        best = max((r.score for r in found), default=0.0)
        assert set(s.unread) <= {r.id for r in found if r.score < 0.6 * best}
    unread = {i for s in steps for i in s.unread}
    assert unread, [(s.sentence, s.retrieved) for s in steps]
    text = {p.id: p.text for p in [*PASSAGES, surname]}
    for passage_id in unread:
        assert not any(text[passage_id] in p for p in lm.prompts)


def test_skip_known_names_with_the_real_model(smollm2: LlamaCppModel, tmp_path: Path) -> None:
    # k=2: the question's search reads the lighthouse's passage and hers ("engineer", "born"). A
    # sentence naming Ada Pemberton searches her name; its best match is her passage, already in
    # the prompt, so the name is not followed: the Dunmore page that shares "born" is never read.
    build_index(PASSAGES, tmp_path / "idx")
    lm, tracer = Recording(smollm2), MemoryTracer()
    settings = Settings(trigger="support", follow_names=True, skip_known_names=True, k=2, found_floor=0.0,
                        max_sentences=3, verify="flag")  # fmt: skip
    Flare(lm, TantivyRetriever(tmp_path / "idx"), settings, tracer=tracer).answer(QUESTION)
    steps = tracer.traces[0].steps
    assert {r.id for r in steps[0].retrieved[:2]} == {"br-1", "br-2"}
    known = [(s.index, i) for s in steps for i in s.known]
    assert known, [(s.sentence, s.queries) for s in steps]
    for s in steps:
        assert set(s.known) <= {"br-1", "br-2"}  # read by the question's search: in every draft's prompt
        if s.known and s.decision == "accept":  # names only: a known one read nothing (no page has two passages)
            assert len(s.retrieved) <= settings.follow_k * (len(s.queries) - len(s.known)), s.retrieved


def test_lazy_follow_with_the_real_model(smollm2: LlamaCppModel, tmp_path: Path) -> None:
    # Every sentence after the first is drafted before any name is searched for. Kept, it is
    # backed by the passages at hand and nothing was searched; dropped, the names are searched
    # for and the kept sentence is the one written after. Names wait for a step that needs them.
    build_index(PASSAGES, tmp_path / "idx")
    lm, tracer = Recording(smollm2), MemoryTracer()
    settings = Settings(trigger="support", follow_names=True, lazy_follow=True, k=1, found_floor=0.0,
                        max_sentences=4, verify="flag")  # fmt: skip
    answer = Flare(lm, TantivyRetriever(tmp_path / "idx"), settings, tracer=tracer).answer(QUESTION)
    steps = tracer.traces[0].steps
    early = [s for s in steps if "predraft" in s.timings]
    assert early, [s.sentence for s in steps]  # the first sentence names Ada Pemberton: a later step drafts first
    for s in early:
        if s.predraft is None:  # kept: backed by what the prompt held, no search
            assert not s.queries and s.support in ("supported", "no_claims") and s.decision == "accept"
        else:  # dropped: the waiting names were searched for before the draft that counts
            assert s.queries and "draft" in s.timings
    assert answer.retrievals == sum(len(s.queries) for s in steps)


def answer_with(smollm2: LlamaCppModel, tmp_path: Path, *, support: float,
                verify: float) -> tuple[Answer, list[StepRecord]]:  # fmt: skip
    """The real loop's answer to QUESTION (support trigger, names followed, marks on) and its
    steps, the trigger and the shown verdict at the given coverages."""
    build_index(PASSAGES, tmp_path / "idx")
    tracer = MemoryTracer()
    settings = Settings(trigger="support", follow_names=True, k=1, max_sentences=3, verify="flag",
                        support_coverage=support, verify_coverage=verify)  # fmt: skip
    answer = Flare(smollm2, TantivyRetriever(tmp_path / "idx"), settings, tracer=tracer).answer(QUESTION)
    return answer, tracer.traces[0].steps


@pytest.mark.parametrize("coverage", [0.6, 1.0])
def test_support_coverage_with_the_real_model(smollm2: LlamaCppModel, tmp_path: Path, coverage: float) -> None:
    # Whatever the small model writes, each verdict in the trace is the one its claims give at
    # the configured coverage, and what the answer marks is what failed it (the shown verdict
    # held to the same coverage as the trigger).
    answer, steps = answer_with(smollm2, tmp_path, support=coverage, verify=coverage)
    steps = [s for s in steps if s.claims and s.support not in ("unchecked", "no_claims")]
    assert steps
    for s in steps:
        if not s.leaked:
            assert s.support == decide(s.claims, Thresholds(supported=coverage))[0], (s.sentence, s.claims)
    shown = {x.text: x for x in answer.sentences}
    for s in steps:
        if s.sentence in shown:
            assert shown[s.sentence].flagged is (s.support != "supported")  # no_claims steps were left out


@pytest.mark.parametrize("most", [0, 1])
def test_trim_sentences_with_the_real_model(smollm2: LlamaCppModel, tmp_path: Path, most: int) -> None:
    # Her passage's four sentences all share a word with the search for her name ("Pemberton");
    # capped at one besides the first, the excerpt keeps the one sharing the most ("Ada Pemberton
    # ... born"), and the two that share only the surname are in no prompt.
    bio = Passage("br-2", "Ada Pemberton was a Scottish engineer. Pemberton designed harbour cranes. Pemberton "
                  "lectured in Leeds. Ada Pemberton was born in Dunmore in 1809.", "Ada Pemberton")  # fmt: skip
    build_index([PASSAGES[0], bio, PASSAGES[2]], tmp_path / "idx")
    lm, tracer = Recording(smollm2), MemoryTracer()
    settings = Settings(trigger="support", follow_names=True, trim_found=True, trim_sentences=most, k=1,
                        max_sentences=3, verify="flag")  # fmt: skip
    Flare(lm, TantivyRetriever(tmp_path / "idx"), settings, tracer=tracer).answer(QUESTION)
    steps = tracer.traces[0].steps
    assert any(r.id == "br-2" for s in steps[1:] for r in s.retrieved), [(s.sentence, s.queries) for s in steps]
    read = [p for p in lm.prompts if "Scottish engineer" in p]
    assert read and all("born in Dunmore" in p for p in read)
    assert all(("harbour cranes" in p) is (most == 0) for p in read)


@pytest.mark.parametrize("coverage", [0.6, 1.0])
def test_verify_coverage_with_the_real_model(smollm2: LlamaCppModel, tmp_path: Path, coverage: float) -> None:
    # Every sentence shown is marked exactly when its claims, as the trace records them, fail the
    # shown verdict's coverage (a kept draft passed the trigger's 0.8, so it passes 0.6; at 1.0
    # it is checked again). The scripted tests show the trigger keeping its own coverage.
    answer, steps = answer_with(smollm2, tmp_path, support=0.8, verify=coverage)
    shown = {x.text: x for x in answer.sentences}
    judged = [s for s in steps if s.sentence in shown and s.claims and not s.leaked and s.support != "no_claims"]
    assert judged, [s.sentence for s in steps]
    for s in judged:
        verdict = decide(s.claims, Thresholds(supported=coverage))[0]
        assert shown[s.sentence].flagged is (verdict != "supported"), (s.sentence, s.claims, s.support)
