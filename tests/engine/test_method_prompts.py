"""Each method carries the prompt it needs: instruct and decompose work outside ``flare eval`` too."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from flare.config import Settings
from flare.engine.loop import Flare
from flare.engine.prompt_styles import STYLE_INSTRUCTIONS
from flare.engine.prompts import PromptTemplate
from flare.lm.base import LanguageModel, StopWhen
from flare.retrieve.corpus import load_corpus
from flare.retrieve.filters import Filters
from flare.retrieve.tantivy_index import TantivyRetriever, build_index
from flare.testing.memory import MemoryRetriever
from flare.testing.scripted import ScriptedLM
from flare.trace.tracers import MemoryTracer
from flare.types import Completion
from tests.engine.support import BARE, DOCS

QUESTION = "Who founded Versace?"
CHATML = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}"


def answers(text: str) -> ScriptedLM:
    return ScriptedLM([("Question:", ScriptedLM.sentence(text))], name="s")


def first_prompt(method: str, *, template: PromptTemplate | None = None, **settings: object) -> str:
    lm = answers(" Gianni Versace founded it.")
    Flare(lm, MemoryRetriever(DOCS), Settings(method=method, max_sentences=1, **settings),  # type: ignore[arg-type]
          template=template).answer(QUESTION)  # fmt: skip
    return lm.calls[0]


def test_instruct_and_decompose_get_their_instructions_and_annotated_exemplars() -> None:
    instruct, decompose, flare = first_prompt("instruct"), first_prompt("decompose"), first_prompt("flare")
    assert STYLE_INSTRUCTIONS["instruct"] in instruct and "[Search(Who runs Orchard Street Clinic?)]" in instruct
    assert STYLE_INSTRUCTIONS["decompose"] in decompose and "Follow up: Who runs Orchard Street Clinic?" in decompose
    assert "[Search(" not in flare and "Follow up:" not in flare
    assert "[Search(" not in decompose and "Follow up:" not in instruct
    assert PromptTemplate.plain().header in flare  # the answer style is the default template itself


def test_a_template_given_to_the_engine_is_used_as_is() -> None:
    assert first_prompt("instruct", template=BARE).startswith("Search results:")  # BARE has no header


def test_the_layout_setting_picks_the_built_in_layout() -> None:
    assert first_prompt("flare").startswith(PromptTemplate.plain().header)
    chat = first_prompt("flare", layout="chatml")
    assert chat.startswith("<|im_start|>system\n") and chat.endswith("<|im_start|>assistant\n")
    lm = answers(" Gianni Versace founded it.")
    lm.chat_template = CHATML  # a model that reports ChatML turns
    engine = Flare(lm, MemoryRetriever(DOCS))
    assert engine.template_for(Settings()).name == "chatml"
    assert engine.template_for(Settings(layout="plain")).name == "plain"
    assert engine.template_for(Settings(method="instruct")).style == "instruct"


def test_a_server_request_can_switch_the_method_and_its_prompt_follows() -> None:
    """The server makes one engine per request from the base engine's template: it must re-style."""
    base = Flare(answers(" x."), MemoryRetriever(DOCS))
    per_request = Flare(base.lm, base.retriever, Settings(method="decompose"), template=base.template)
    assert per_request.template_for(per_request.settings).style == "decompose"


class Recording:
    """Delegates to a real model and keeps every prompt it was given."""

    def __init__(self, lm: LanguageModel) -> None:
        self.lm = lm
        self.name = lm.name
        self.supports_logprobs = lm.supports_logprobs
        self.supports_logit_bias = lm.supports_logit_bias
        self.chat_template = getattr(lm, "chat_template", None)
        self.prompts: list[str] = []

    def complete(self, prompt: str, *, max_tokens: int, stop: Sequence[str] = (), stop_when: StopWhen | None = None,
                 logit_bias: Mapping[str, float] | None = None) -> Completion:  # fmt: skip
        self.prompts.append(prompt)
        return self.lm.complete(prompt, max_tokens=max_tokens, stop=stop, stop_when=stop_when, logit_bias=logit_bias)

    def count_tokens(self, text: str) -> int:
        return int(self.lm.count_tokens(text))


@pytest.mark.model
def test_smollm2_asked_for_searches_writes_search_tags(tmp_path: Path) -> None:
    """With the instruct exemplars SmolLM2 asks for its own searches; with the plain ones it never did."""
    from importlib.resources import files

    from flare.lm.registry import resolve_model

    handbook = Path(str(files("flare") / "data" / "examples" / "handbook.jsonl"))
    build_index(load_corpus(handbook), tmp_path / "idx", progress=False)
    real = resolve_model("smollm2", n_threads=1)
    lm = Recording(real)
    tracer = MemoryTracer()
    engine = Flare(lm, TantivyRetriever(tmp_path / "idx"), Settings(method="instruct", max_sentences=3), tracer=tracer)
    try:
        answer = engine.answer("When was Northwind Labs founded?", filters=Filters.any_of("acl", ["staff"]))
    finally:
        real.close()  # type: ignore[attr-defined]
    assert all(STYLE_INSTRUCTIONS["instruct"] in p for p in lm.prompts)
    assert answer.text and "[Search(" not in answer.text  # tags are never shown
    steps = tracer.traces[0].steps
    assert {s.kind for s in steps} == {"instruct"}
    assert answer.retrievals > 1, [s.queries for s in steps]  # searched on its own after the first
