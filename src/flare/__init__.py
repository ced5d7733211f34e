"""flare: forward-looking active retrieval augmented generation (FLARE), fast and offline.

The model drafts each sentence first; only when a drafted token's probability falls below θ does
flare search (with the draft, unsure words masked) and rewrite the sentence from what it found,
citing it. Searches always run under the caller's filters.

Models and retrievers are named by spec strings, the same ones the CLI's ``--model`` and
``--index`` take (``gemma3``, ``smollm2``, ``openai:URL#MODEL``, ``PATH.gguf``; ``DIR``,
``dense:DIR``, ``hybrid:DIR``, ``milvus:URI#COLLECTION``); ``register_model`` and
``register_retriever`` add prefixes of your own.

Codes such as ``M2``, ``C1`` or ``O3`` in flare's comments and docstrings name requirements;
``docs/requirements.md`` defines each one, and ``docs/architecture.md`` draws the layers.

Example::

    from flare import Filters, Flare, Settings, build_retriever, load_corpus, open_retriever, resolve_model

    build_retriever("my-index", load_corpus("docs/"))        # or "hybrid:my-index", ...
    engine = Flare(resolve_model("gemma3"), open_retriever("my-index"), Settings(theta=0.4))
    answer = engine.answer("How long do refunds take?", filters=Filters.parse(["year=2026"]))
    print(answer.render())
"""

from __future__ import annotations

from flare.config import Settings
from flare.engine.events import Event, Finished, Rewriting, Searching, SentenceAccepted
from flare.engine.loop import Flare
from flare.engine.methods import register_policy
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
from flare.lm.registry import register_model, resolve_model
from flare.retrieve.base import Retriever
from flare.retrieve.corpus import load_corpus
from flare.retrieve.filters import Filters
from flare.retrieve.registry import build_retriever, open_retriever, register_retriever
from flare.trace.tracers import JsonlTracer, MemoryTracer, Tracer
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
    "Tracer",
    "build_retriever",
    "load_corpus",
    "open_retriever",
    "register_model",
    "register_policy",
    "register_retriever",
    "resolve_model",
]
