"""The versioned trace of one answer: every decision the loop made, as plain JSON.

One answer is one JSON object (one line in a ``.jsonl`` file). Passage text is *not* recorded
unless ``record_content`` is set: ids and scores are enough to audit a decision, and keeping
document text out of traces by default keeps permissions simple when traces are shared.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

TRACE_VERSION = "flare.trace/1"

Decision = Literal[
    "", "accept", "retrieve", "generate", "end", "no_evidence", "omit", "irrelevant",
    "cap:max_retrievals", "cap:max_retries_per_gap",
]  # fmt: skip
"""What a step decided: keep the confident draft (``accept``), search and rewrite (``retrieve``),
write from documents already held (``generate``), the model ended (``end``), the search found
nothing (``no_evidence``; ``omit`` when the sentence was then skipped), the documents looked
irrelevant (``irrelevant``, conditional commit), or a budget forbade searching (``cap:…``)."""


@dataclass(slots=True)
class RetrievedRecord:
    """One passage that a step retrieved."""

    id: str
    score: float
    title: str = ""
    text: str | None = None  # only with record_content


@dataclass(slots=True)
class StepRecord:
    """One sentence of the answer: draft, verdict, queries, retrieval and the committed text."""

    index: int
    kind: str  # "initial" (first sentence from the question's documents), "draft", "generate"
    draft: str | None = None
    draft_tokens: list[tuple[str, float]] = field(default_factory=list)
    low_tokens: list[tuple[str, float]] = field(default_factory=list)
    threshold: float | None = None
    decision: Decision = ""
    queries: list[str] = field(default_factory=list)
    retrieved: list[RetrievedRecord] = field(default_factory=list)
    sentence: str = ""
    citations: list[int] = field(default_factory=list)
    grounded: bool = True
    # The support checker (when verify is on): its label, the unbacked spans, the weighted share
    # of claims found, the mean evidence lift (nats) and exemplar-only names; ``verify`` says what
    # was done: "pass", "flag", "drop", "retry" (then the retried sentence's verdict is recorded).
    support: str = "unchecked"
    unsupported: list[str] = field(default_factory=list)
    coverage: float | None = None
    lift: float | None = None
    leaked: list[str] = field(default_factory=list)
    claims: list[tuple[str, str, bool, float | None]] = field(default_factory=list)  # text, kind, found, lift
    evidence: list[str] = field(default_factory=list)  # ids of the passages the sentence was checked against
    verify: str = ""
    # trigger=support: the checker's verdict on a draft it sent to search (the fields above then
    # describe the rewritten sentence, "unchecked" with verify=off).
    draft_support: str = ""
    draft_unsupported: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)  # sentences dropped before acceptance
    unread: list[str] = field(default_factory=list)  # found_floor: ids retrieved but scoring too low to read
    known: list[str] = field(default_factory=list)  # skip_known_names: a name's own page, its best match, already read
    predraft: str | None = None  # draft_before_follow: a draft written before a names search, then dropped
    timings: dict[str, float] = field(default_factory=dict)  # draft, retrieve, regenerate, questions
    lm_calls: int = 0
    lm_tokens_evaluated: int = 0  # prompt tokens actually evaluated + generated tokens
    output_tokens: int = 0

    def draft_rejected(self) -> None:
        """The checked draft is not the sentence: keep its verdict as the draft's, clear the rest."""
        self.draft_support, self.draft_unsupported = self.support, self.unsupported
        self.clear_verdict()

    def clear_verdict(self) -> None:
        """Forget the checker's verdict (the sentence it was about is not the step's)."""
        self.support, self.unsupported, self.coverage, self.lift = "unchecked", [], None, None
        self.leaked, self.claims, self.evidence = [], [], []


@dataclass(slots=True)
class TraceRecord:
    """The whole answer. ``to_dict`` gives the JSON line written by :class:`JsonlTracer`."""

    trace_id: str
    question: str
    method: str
    model: str
    retriever: str
    filters: str
    settings: dict[str, Any]
    steps: list[StepRecord] = field(default_factory=list)
    answer: str = ""
    rendered: str = ""
    stop_reason: str = ""
    caps_hit: list[str] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)
    retrievals: int = 0
    lm_calls: int = 0
    lm_tokens_evaluated: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    started_at: float = 0.0
    version: str = TRACE_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
