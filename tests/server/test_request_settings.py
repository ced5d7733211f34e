"""Request settings: generated from the settings table, applied by each setting's request policy."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from flare.config import Settings, setting_infos
from flare.engine.loop import Flare
from flare.engine.prompts import PromptTemplate
from flare.lm.llama import LlamaCppModel
from flare.retrieve.tantivy_index import TantivyRetriever
from flare.server import Limits, create_app
from flare.server.chat import ChatRequest
from flare.server.errors import ApiError
from flare.server.request_settings import request_infos, request_settings
from flare.server.routes import AnswerRequest
from tests.server.support import STAFF_KEY, LiveServer, ParrotLM, keys

QUESTION = "How are travel expenses reimbursed after receipts?"
BASE = Settings(theta=0.5, k=3, max_sentences=3, max_seconds=60)


def test_every_request_setting_is_a_body_field_of_both_routes() -> None:
    settable = {i.name for i in request_infos()}
    assert settable == {i.name for i in setting_infos() if i.request != "operator"}
    assert {"theta", "method", "k", "conditional_commit", "on_missing", "max_retries_per_gap"} <= settable
    for model in (AnswerRequest, ChatRequest):
        assert settable <= set(model.model_fields), model.__name__


def test_policies_free_lower_and_the_four_budgets() -> None:
    limits = Limits(max_sentences=2)
    s = request_settings(BASE, limits, {"theta": 0.9, "trigger": "mean", "k": 10, "max_sentences": 9,
                                        "max_retries_per_gap": 0})  # fmt: skip
    assert (s.theta, s.trigger) == (0.9, "mean")  # free
    assert s.k == 3 and s.max_retries_per_gap == 0  # lower: clamped to the server's, or lowered
    assert s.max_sentences == 2  # a budget: the smallest of request, server settings and limits
    assert request_settings(BASE, limits, {"k": 1}).k == 1


def test_a_stricter_setting_moves_only_towards_the_strict_end() -> None:
    lang = next(i for i in setting_infos() if i.name == "language")
    strict = tuple(replace(i, request="stricter", order=("auto", "en", "zh")) if i is lang else i
                   for i in request_infos())  # fmt: skip
    base = BASE.with_overrides(language="en")
    assert request_settings(base, Limits(), {"language": "zh"}, infos=strict).language == "zh"
    assert request_settings(base, Limits(), {"language": "en"}, infos=strict).language == "en"
    with pytest.raises(ApiError) as err:
        request_settings(base, Limits(), {"language": "auto"}, infos=strict)
    assert err.value.status == 400 and "language='auto' is laxer than this server's 'en'" in err.value.message
    assert "choose one of: en, zh" in err.value.message


def test_an_operator_setting_and_bad_values_are_refused() -> None:
    operator_k = tuple(i for i in request_infos() if i.name != "k")
    with pytest.raises(ApiError, match="k cannot be set by a request"):
        request_settings(BASE, Limits(), {"k": 1}, infos=operator_k)
    with pytest.raises(ApiError, match="method 'magic' is not available"):
        request_settings(BASE, Limits(), {"method": "magic"})
    with pytest.raises(ApiError, match=r"theta=1\.5 is out of range"):
        request_settings(BASE, Limits(), {"theta": 1.5})
    with pytest.raises(ApiError, match="max_seconds must be positive"):
        request_settings(BASE, Limits(), {"max_seconds": 0})


@pytest.fixture()
def server(index_dir: Path) -> Iterator[LiveServer]:
    engine = Flare(ParrotLM(), TantivyRetriever(index_dir), BASE, template=PromptTemplate.plain())
    with LiveServer(create_app(engine, keys(), Limits())) as live:
        yield live


def test_request_settings_over_http(server: LiveServer) -> None:
    with server.client(STAFF_KEY) as http:
        none = http.post("/v1/answers", json={"question": QUESTION, "method": "none", "max_sentences": 1}).json()
        one = http.post("/v1/answers", json={"question": QUESTION, "k": 1, "theta": 0.0}).json()
        many = http.post("/v1/answers", json={"question": QUESTION, "k": 50}).json()
        traces = [http.get(f"/v1/traces/{a['trace_id']}").json() for a in (none, one, many)]
        chat = http.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": QUESTION}],
                                                        "method": "single", "k": 2, "max_sentences": 1}).json()
        chat_trace = http.get(f"/v1/traces/{chat['flare']['trace_id']}").json()
        bad = [http.post("/v1/answers", json={"question": QUESTION, **extra})
               for extra in ({"theta": 2}, {"trigger": "loud"}, {"method": "magic"}, {"thetta": 0.3})]  # fmt: skip
    assert none["retrievals"] == 0 and traces[0]["settings"]["method"] == "none"
    assert traces[1]["settings"]["k"] == 1 and all(len(s["retrieved"]) <= 1 for s in traces[1]["steps"])
    assert traces[1]["settings"]["theta"] == 0.0 and one["retrievals"] == 1  # θ=0: only the first search
    assert traces[2]["settings"]["k"] == 3  # lower: a request cannot raise k above the server's
    assert chat_trace["settings"]["method"] == "single" and chat_trace["settings"]["k"] == 2
    assert [r.status_code for r in bad] == [400, 400, 400, 400]
    messages = [r.json()["error"]["message"] for r in bad]
    assert "theta" in messages[0] and "trigger" in messages[1] and "not available" in messages[2]
    assert "thetta" in messages[3]


@pytest.mark.model
def test_a_request_picks_the_method_of_a_real_model_answer(index_dir: Path, smollm2: LlamaCppModel) -> None:
    engine = Flare(smollm2, TantivyRetriever(index_dir), Settings(max_sentences=1))
    with LiveServer(create_app(engine, keys(), Limits())) as live, live.client(STAFF_KEY) as http:
        none = http.post("/v1/answers", json={"question": QUESTION, "method": "none"}).json()
        single = http.post("/v1/answers", json={"question": QUESTION, "method": "single", "k": 1}).json()
        trace = http.get(f"/v1/traces/{single['trace_id']}").json()
    assert none["retrievals"] == 0 and none["sources"] == []
    assert single["retrievals"] == 1 and len(trace["steps"][0]["retrieved"]) == 1


def test_a_request_can_make_verification_stricter_but_never_laxer() -> None:
    base = BASE.with_overrides(verify="flag")
    assert request_settings(base, Limits(), {"verify": "retry"}).verify == "retry"
    assert request_settings(base, Limits(), {"verify": "drop"}).verify == "drop"
    assert request_settings(BASE, Limits(), {"verify": "flag"}).verify == "flag"  # the server's is off
    with pytest.raises(ApiError) as err:
        request_settings(base, Limits(), {"verify": "off"})
    assert err.value.status == 400 and "laxer" in err.value.message
    with pytest.raises(ApiError):
        request_settings(base.with_overrides(verify="drop"), Limits(), {"verify": "retry"})
