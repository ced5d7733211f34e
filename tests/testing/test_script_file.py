"""``--model scripted:FILE``: the format, and a clear ModelError for every way a file can be wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flare.errors import ModelError
from flare.lm.registry import registered_models, resolve_model


def write(tmp_path: Path, data: Any, name: str = "s.json") -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return f"scripted:{path}"


def test_rules_match_in_order_by_substring_regex_or_anything(tmp_path: Path) -> None:
    spec = write(tmp_path, {"name": "mine", "supports_logit_bias": False, "rules": [
        {"match": "Search results", "say": " Refunds take 14 days."},
        {"regex": r"refund\w*\?$", "say": " Refunds take 30 days.", "low": {"30": 0.2}, "prob": 0.9},
        {"tokens": [[" I", 0.5], [" don't", 0.4], [" know.", 0.6]]},
    ]})  # fmt: skip
    lm = resolve_model(spec)
    assert lm.name == "mine" and lm.supports_logprobs and not lm.supports_logit_bias
    regen = lm.complete("Search results: [1] ...\nHow long do refunds take?", max_tokens=20)
    assert regen.text == " Refunds take 14 days."
    draft = lm.complete("How long do refunds?", max_tokens=20)
    assert draft.text == " Refunds take 30 days."
    assert {t.text.strip(): round(t.prob, 6) for t in draft.tokens}["30"] == 0.2
    assert min(round(t.prob, 6) for t in draft.tokens if t.text.strip() != "30") == 0.9
    other = lm.complete("Anything else", max_tokens=20)
    assert [(t.text, round(t.prob, 6)) for t in other.tokens] == [(" I", 0.5), (" don't", 0.4), (" know.", 0.6)]


def test_a_prompt_no_rule_matches_is_a_model_error(tmp_path: Path) -> None:
    lm = resolve_model(write(tmp_path, {"rules": [{"match": "never", "say": "x"}]}))
    with pytest.raises(ModelError, match=r"no rule matches the prompt ending 'first line\\nQUESTION\?'") as info:
        lm.complete("first line\nQUESTION?", max_tokens=4)
    assert "without \"match\"" in info.value.hint


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ("{not json", "not valid JSON (line 1"),
        ([], "non-empty \"rules\" list"),
        ({"rules": []}, "non-empty \"rules\" list"),
        ({"rules": [{"say": "x"}], "colour": 1}, "unknown keys ['colour']"),
        ({"rules": ["x"]}, "rule 1 must be an object"),
        ({"rules": [{"say": "x"}, {"sya": "x"}]}, "rule 2 has unknown keys ['sya']"),
        ({"rules": [{"match": "a"}]}, "exactly one of say or tokens"),
        ({"rules": [{"say": "a", "tokens": [["a", 0.5]]}]}, "exactly one of say or tokens"),
        ({"rules": [{"match": "a", "regex": "b", "say": "x"}]}, "match or regex, not both"),
        ({"rules": [{"regex": "(", "say": "x"}]}, "rule 1"),
        ({"rules": [{"say": "x", "prob": 0}]}, "probability"),
        ({"rules": [{"say": "x", "prob": "high"}]}, "prob must be a number"),
        ({"rules": [{"say": "x y", "low": {"z": 0.1}}]}, "low names no token"),
        ({"rules": [{"tokens": [["a", 1.5]]}]}, "probability"),
        ({"rules": [{"tokens": "a"}]}, "[text, probability] pairs"),
        ({"rules": [{"tokens": [["a", 0.5]], "low": {}}]}, "low and prob go with say"),
        ({"rules": [{"match": 3, "say": "x"}]}, "match must be a string"),
        ({"rules": [{"say": "x"}], "supports_logprobs": "yes"}, "must be true or false"),
        ({"rules": [{"say": "x"}], "name": ""}, "name must be a non-empty string"),
    ],
)  # fmt: skip
def test_bad_files_name_the_problem(tmp_path: Path, data: Any, needle: str) -> None:
    with pytest.raises(ModelError) as info:
        resolve_model(write(tmp_path, data))
    assert needle in info.value.message and info.value.hint


def test_missing_unreadable_or_unnamed_file(tmp_path: Path) -> None:
    assert "scripted" in registered_models()
    with pytest.raises(ModelError, match="not found"):
        resolve_model(f"scripted:{tmp_path / 'nope.json'}")
    with pytest.raises(ModelError, match="needs a file"):
        resolve_model("scripted:")
    (tmp_path / "latin.json").write_bytes(b'{"rules": "caf\xe9"}')
    with pytest.raises(ModelError, match="cannot read"):
        resolve_model(f"scripted:{tmp_path / 'latin.json'}")
    with pytest.raises(ModelError, match="cannot read"):
        resolve_model(f"scripted:{tmp_path}")  # a directory
