"""The server's parts on their own: key files, budgets, metrics text and SSE deltas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flare.config import Settings
from flare.errors import ConfigError
from flare.retrieve.filters import Filters
from flare.server import KeyStore, Limits
from flare.server.auth import digest
from flare.server.errors import ApiError
from flare.server.limits import budget_settings
from flare.server.metrics import Metrics
from flare.server.sse import Delta, comment, message
from flare.types import Answer, Citation, Sentence

KEY = "sk-test-0123456789abcdef"


def test_key_file_toml_and_json(tmp_path: Path) -> None:
    toml = tmp_path / "keys.toml"
    toml.write_text(
        f'acl_field = "groups"\n[[keys]]\nkey = "{KEY}"\nprincipal = "ann"\ngroups = ["b", "a"]\n'
        f'filters = ["year>=2025"]\n[[keys]]\nkey_sha256 = "{digest("sk-other-0123456789abcdef")}"\n'
        'principal = "bob"\n',
        encoding="utf-8",
    )
    store = KeyStore.load(toml)
    ann = store.authenticate(f"Bearer {KEY}")
    assert ann is not None and ann.name == "ann" and ann.groups == ("a", "b")
    assert ann.filters == Filters.any_of("groups", ["a", "b"]).narrow(Filters.parse(["year>=2025"]))
    bob = store.authenticate(None, "sk-other-0123456789abcdef")
    assert bob is not None and not bob.filters.matches({"groups": ["a"]})  # no groups: nothing
    assert store.authenticate("Bearer nope") is None and store.authenticate(None) is None
    js = tmp_path / "keys.json"
    js.write_text(json.dumps({"keys": [{"key": KEY, "principal": "ann", "groups": ["a"]}]}))
    assert KeyStore.load(js).authenticate(f"bearer  {KEY}") is not None


@pytest.mark.parametrize(
    ("entries", "words"),
    [
        ([{"key": "short", "principal": "a"}], "16 characters"),
        ([{"principal": "a"}], "exactly one"),
        ([{"key": KEY, "principal": ""}], "principal"),
        ([{"key": KEY, "principal": "a", "groups": "staff"}], "groups"),
        ([{"key": KEY, "principal": "a", "groups": ["st\udfffaff"]}], "printable"),
        ([{"key": KEY, "principal": "a", "groups": ["staff\n"]}], "printable"),
        ([{"key": KEY, "principal": "a", "filters": ["year=="]}], "filter"),
        ([{"key": KEY, "principal": "a", "admin": True}], "unknown field"),
        ([{"key": KEY, "principal": "a"}, {"key": KEY, "principal": "b"}], "twice"),
        ([{"key": KEY, "principal": "a", "groups": ["x"]},
          {"key": KEY + "x", "principal": "a", "groups": ["y"]}], "different groups"),
        ([], "no keys"),
    ],
)  # fmt: skip
def test_bad_key_files_fail_at_start(entries: list[dict[str, object]], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        KeyStore.from_config({"keys": entries})


def test_missing_key_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        KeyStore.load(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[[keys]\n")
    with pytest.raises(ConfigError, match="not valid"):
        KeyStore.load(bad)


def test_budgets_take_the_smallest() -> None:
    base = Settings(max_sentences=6, max_seconds=100)
    limits = Limits(max_sentences=4, max_seconds=30)
    s = budget_settings(base, limits, {"max_sentences": 10, "max_seconds": 5, "max_retrievals": 0})
    assert (s.max_sentences, s.max_seconds, s.max_retrievals) == (4, 5, 0)
    assert s.max_output_tokens == min(base.max_output_tokens, limits.max_output_tokens)
    with pytest.raises(ApiError):
        budget_settings(base, limits, {"max_retrievals": -1})
    with pytest.raises(ConfigError):
        Limits(max_concurrency=0)


def test_metrics_text_format() -> None:
    m = Metrics(lambda: 2)
    answer = {"sentences": [{"retrieved": True}, {"retrieved": False}], "stop_reason": "end",
              "retrievals": 1, "lm_calls": 3}  # fmt: skip
    trace = {"lm_tokens_evaluated": 50, "steps": [{"timings": {"draft": 0.02, "retrieve": 0.003}}]}
    m.record_answer(answer, trace, 1.5)
    m.inc("flare_http_requests_total", route="/v1/answers", status="200")
    text = m.render()
    assert "flare_trigger_rate 0.5\n" in text
    assert 'flare_answers_total{stop_reason="end"} 1\n' in text
    assert 'flare_answer_seconds_bucket{le="1.0"} 0\n' in text
    assert 'flare_answer_seconds_bucket{le="2.5"} 1\n' in text
    assert 'flare_answer_seconds_bucket{le="+Inf"} 1\n' in text
    assert 'flare_stage_seconds_count{stage="draft"} 1\n' in text
    assert "flare_in_flight 2\n" in text and "flare_lm_tokens_evaluated_total 50\n" in text
    assert "# TYPE flare_answer_seconds histogram" in text


def test_delta_concatenates_to_the_rendered_answer() -> None:
    sentences = (Sentence("Refunds take ten days.", True, (1,)), Sentence("退款需要十天。", True, (2,)),
                 Sentence("That is all", False))  # fmt: skip
    sources = (Citation(1, "a", "A", "x"), Citation(2, "b", "", "y"))
    answer = Answer("q", sentences, sources, "end", "t")
    d = Delta()
    text = "".join(d.add(s) for s in sentences) + d.finish(answer)
    assert text == answer.render()
    assert text.startswith("Refunds take ten days[1]. 退款需要十天[2]。")


def test_sse_framing() -> None:
    assert message("done", {"a": "é\nb"}) == b'event: done\ndata: {"a": "\\u00e9\\nb"}\n\n'.replace(
        b"\\u00e9", "é".encode()
    )
    assert message(None, "[DONE]") == b"data: [DONE]\n\n"
    assert comment("keep\nalive") == b": keep alive\n\n"
