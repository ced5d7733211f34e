"""flare: forward-looking active retrieval augmented generation (FLARE), fast and offline.

The model drafts each sentence first; only when a drafted token's probability falls below θ does
flare search (with the draft, unsure words masked) and rewrite the sentence from what it found,
citing it. Searches always run under the caller's filters.

Example::

    from flare import Filters, Flare, Settings, build_index, load_corpus, load_model, open_index

    build_index(load_corpus("docs/"), "my-index")
    engine = Flare(load_model("gemma3"), open_index("my-index"), Settings(theta=0.4))
    answer = engine.answer("How long do refunds take?", filters=Filters.parse(["year=2026"]))
    print(answer.render())
"""

from __future__ import annotations

from flare.config import Settings
from flare.engine.events import Event, Finished, Rewriting, Searching, SentenceAccepted
from flare.engine.loop import Flare
from flare.errors import (
    ConfigError,
    CorpusIndexError,
    FilterError,
    FlareError,
    InputError,
    ModelError,
    RetrieverError,
)
from flare.lm.base import LanguageModel
from flare.lm.registry import resolve_model as load_model
from flare.retrieve.base import Retriever
from flare.retrieve.corpus import load_corpus
from flare.retrieve.filters import Filters
from flare.retrieve.tantivy_index import TantivyRetriever as open_index
from flare.retrieve.tantivy_index import build_index
from flare.trace.tracers import JsonlTracer, MemoryTracer
from flare.types import Answer, Citation, Completion, Hit, Passage, Sentence, TokenLogprob

__all__ = [
    "Answer",
    "Citation",
    "Completion",
    "ConfigError",
    "CorpusIndexError",
    "Event",
    "FilterError",
    "Filters",
    "Finished",
    "Flare",
    "FlareError",
    "Hit",
    "InputError",
    "JsonlTracer",
    "LanguageModel",
    "MemoryTracer",
    "ModelError",
    "Passage",
    "Retriever",
    "RetrieverError",
    "Rewriting",
    "Searching",
    "Sentence",
    "SentenceAccepted",
    "Settings",
    "TokenLogprob",
    "build_index",
    "load_corpus",
    "load_model",
    "open_index",
]
