"""Capabilities are declared with defaults (ModelBase), read in one place (declared), and the
wrappers (ForwardingLM) forward every call and capability to the model they wrap."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

import pytest

from flare.engine.loop import Flare
from flare.engine.metered import MeteredLM
from flare.errors import ModelError
from flare.lm.base import ForwardingLM, LanguageModel, ModelBase, StopWhen, declared, parallel_calls
from flare.lm.pool import ModelPool
from flare.server.runner import SharedLM
from flare.testing.memory import MemoryRetriever
from flare.testing.scripted import ScriptedLM
from flare.types import Completion, Passage

CHATML = "{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}"


class Minimal(ModelBase):
    """A backend that declares nothing beyond what it must."""

    name = "minimal"

    def complete(self, prompt: str, *, max_tokens: int, stop: Sequence[str] = (), stop_when: StopWhen | None = None,
                 logit_bias: Mapping[str, float] | None = None) -> Completion:  # fmt: skip
        return Completion(" Paris.", (), "stop", 3, 3, 2)

    def count_tokens(self, text: str) -> int:
        return len(text.split())


class Bare:
    """A model written against the bare protocol: no ModelBase, some capabilities as attributes."""

    name = "bare"
    supports_logprobs = False
    supports_logit_bias = False
    supports_scoring = True
    chat_template = CHATML
    continuation = "instruct"
    max_parallel = 3

    def __init__(self) -> None:
        self.loaded = self.closed = 0
        self.kept: list[str] = []
        self.scored: list[tuple[str, str]] = []

    def complete(self, prompt: str, *, max_tokens: int, stop: Sequence[str] = (), stop_when: StopWhen | None = None,
                 logit_bias: Mapping[str, float] | None = None) -> Completion:  # fmt: skip
        return Completion(" Paris.", (), "stop", 3, 3, 2)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def score(self, prompt: str, continuation: str) -> Completion:
        self.scored.append((prompt, continuation))
        return Completion(continuation, (), "stop", 4, 1)

    def load(self) -> None:
        self.loaded += 1

    def close(self) -> None:
        self.closed += 1

    def reset_cache(self, keep: str = "") -> None:
        self.kept.append(keep)


class Oldest:
    """The oldest protocol: a name, the two flags, complete and count_tokens; nothing else."""

    name, supports_logprobs, supports_logit_bias = "oldest", False, False

    def complete(self, prompt: str, *, max_tokens: int, stop: Sequence[str] = (), stop_when: StopWhen | None = None,
                 logit_bias: Mapping[str, float] | None = None) -> Completion:  # fmt: skip
        return Completion(" Paris.", (), "stop", 3, 3, 2)

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def test_a_backend_gets_every_capability_at_its_default() -> None:
    lm = Minimal()
    assert isinstance(lm, LanguageModel) and declared(lm) is lm
    assert (lm.supports_logprobs, lm.supports_logit_bias, lm.supports_scoring) == (False, False, False)
    assert (lm.chat_template, lm.continuation, lm.max_parallel, parallel_calls(lm)) == (None, None, 1, 1)
    lm.load()
    lm.close()
    lm.reset_cache("header")  # nothing cached: nothing to do
    with pytest.raises(ModelError, match="'minimal' cannot score a given text") as err:
        lm.score("Question: x\nAnswer:", " Paris.")
    assert "supports_scoring" in str(err.value) and "\n" not in str(err.value)


def test_a_bare_protocol_model_is_read_through_declared() -> None:
    bare = Bare()
    model = declared(bare)
    assert isinstance(model, ForwardingLM) and model.inner is bare
    assert (model.name, model.supports_logprobs, model.supports_logit_bias) == ("bare", False, False)
    assert (model.supports_scoring, model.chat_template, model.continuation, model.max_parallel) == (
        True, CHATML, "instruct", 3)  # fmt: skip
    model.load()
    model.close()
    model.reset_cache("header")
    assert (bare.loaded, bare.closed, bare.kept) == (1, 1, ["header"])
    assert model.score("p", " q").text == " q" and bare.scored == [("p", " q")]
    assert model.complete("p", max_tokens=4).text == " Paris." and model.count_tokens("a b") == 2


def test_the_oldest_protocol_gets_the_defaults() -> None:
    model = declared(Oldest())
    assert (model.supports_scoring, model.chat_template, model.continuation, model.max_parallel) == (
        False, None, None, 1)  # fmt: skip
    model.load()  # nothing to load: no error
    model.close()
    model.reset_cache("header")  # no cache: no error
    with pytest.raises(ModelError, match="'oldest' cannot score a given text"):
        model.score("p", " q")


def test_capabilities_of_the_wrong_type_read_as_the_defaults() -> None:
    class Odd(Oldest):
        chat_template = 42
        continuation = b"prefill"
        max_parallel = True
        load = "not callable"

    model = declared(Odd())
    assert (model.chat_template, model.continuation, model.max_parallel) == (None, None, 1)
    model.load()


def test_the_engine_reads_a_bare_models_chat_template() -> None:
    engine = Flare(Bare(), MemoryRetriever([Passage("p", "Paris is the capital of France.", "Paris")]))
    assert engine.template.name == "chatml"
    assert Flare(Oldest(), engine.retriever).template.name == "plain"


def test_forwarding_passes_every_argument_and_capability() -> None:
    inner = ScriptedLM([("", ScriptedLM.sentence(" Paris is the capital. Then"))], name="inner")
    inner.chat_template = CHATML
    seen: list[str] = []

    def stop_at_dot(text: str) -> bool:
        seen.append(text)
        return text.endswith(".")

    model = ForwardingLM(inner)
    assert (model.name, model.supports_scoring, model.chat_template) == ("inner", True, CHATML)
    c = model.complete("Question: x\nAnswer:", max_tokens=9, stop=["\n"], stop_when=stop_at_dot,
                       logit_bias={"[": -100.0})  # fmt: skip
    assert c.text == " Paris is the capital." and seen and c.finish_reason == "sentence"
    request = inner.requests[-1]
    assert (request.max_tokens, request.stop, request.logit_bias) == (9, ("\n",), {"[": -100.0})
    assert model.score("Question: x\nAnswer:", " Paris").text == " Paris" and inner.scored
    assert model.count_tokens("Paris is") == inner.count_tokens("Paris is")


def test_a_wrapper_overrides_only_its_hooks() -> None:
    class Counting(ForwardingLM):
        calls = scores = 0

        def _done(self, c: Completion, *, scored: bool) -> Completion:
            self.calls += 1
            self.scores += scored
            return c

    model = Counting(Bare())
    model.complete("p", max_tokens=3)
    model.score("p", " q")
    model.count_tokens("p")
    assert (model.calls, model.scores) == (2, 1)


def test_metering_counts_generated_tokens_of_completions_only() -> None:
    metered = MeteredLM(Bare())
    metered.complete("p", max_tokens=3)  # prompt 3, evaluated 3, generated 2
    metered.score("p", " q")  # prompt 4, evaluated 1
    assert (metered.calls, metered.prompt_tokens, metered.prompt_tokens_evaluated, metered.generated_tokens) == (
        2, 7, 4, 2)  # fmt: skip
    assert metered.tokens_evaluated == 6 and metered.chat_template == CHATML and metered.max_parallel == 3


def test_every_wrapper_reports_a_missing_score_as_a_model_error() -> None:
    wrappers: list[ModelBase] = [
        MeteredLM(Oldest()),
        SharedLM(Oldest(), threading.BoundedSemaphore(1), threading.Event()),
        ModelPool(Oldest, size=2),
        MeteredLM(MeteredLM(Oldest())),
    ]
    for lm in wrappers:
        assert not lm.supports_scoring
        with pytest.raises(ModelError, match="'oldest' cannot score a given text"):
            lm.score("p", " q")


def test_a_pool_forwards_the_first_copys_capabilities_and_loads_every_copy() -> None:
    copies: list[Bare] = []

    def make() -> Bare:
        copies.append(Bare())
        return copies[-1]

    pool = ModelPool(make, size=2)
    assert (pool.name, pool.max_parallel, pool.supports_scoring, pool.chat_template) == ("bare", 2, True, CHATML)
    pool.load()
    pool.close()
    assert [(c.loaded, c.closed) for c in copies] == [(1, 1), (1, 1)]
    assert pool.score("p", " q").text == " q" and sum(len(c.scored) for c in copies) == 1
