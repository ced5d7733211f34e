"""The public API is small, sorted and importable; everything else is private by module."""

from __future__ import annotations

from types import ModuleType

import flare

PUBLIC = [
    "Answer", "Citation", "Completion", "ConfigError", "CorpusIndexError", "Event", "FilterError",
    "Filters", "Finished", "Flare", "FlareError", "Hit", "InputError", "JsonlTracer", "LanguageModel",
    "MemoryTracer", "ModelError", "Passage", "Retriever", "RetrieverError", "Rewriting", "Searching",
    "Sentence", "SentenceAccepted", "Settings", "TokenLogprob", "Tracer", "build_retriever",
    "load_corpus", "open_retriever", "register_model", "register_policy", "register_retriever", "resolve_model",
]  # fmt: skip


def test_all_is_pinned_sorted_and_importable() -> None:
    assert flare.__all__ == PUBLIC, "a change to the public API must be deliberate: update PUBLIC"
    assert flare.__all__ == sorted(flare.__all__)
    for name in flare.__all__:
        assert getattr(flare, name) is not None
    others = {n for n in dir(flare) if not n.startswith("_")} - set(PUBLIC) - {"annotations"}
    assert all(isinstance(getattr(flare, n), ModuleType) for n in others), "only submodules besides __all__"


def test_one_name_per_function() -> None:
    objects = [getattr(flare, n) for n in flare.__all__]
    assert len({id(o) for o in objects}) == len(objects)


def test_importing_flare_does_not_load_llama_cpp() -> None:
    import subprocess
    import sys

    code = "import sys, flare; print('llama_cpp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
