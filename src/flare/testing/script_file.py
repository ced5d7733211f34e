"""``--model scripted:FILE.json``: a :class:`~flare.testing.scripted.ScriptedLM` from a JSON file.

It lets the CLI, the server and any program run end to end without a real model: the file says
which sentence the model writes for which prompt, and which words it is unsure of. A rule's
``match`` is a substring of the prompt (``regex`` a regular expression searched in it; neither:
every prompt). It says ``say`` (text split into word-sized tokens, each at ``prob``, 0.95 unless
given, except the words in ``low``) or ``tokens`` (``[text, probability]`` pairs). The first rule
that matches wins. A prompt no rule matches raises :class:`~flare.errors.ModelError`, so end the
list with a rule that has no ``match``::

    {
      "name": "handbook-script",
      "rules": [
        {"match": "Search results", "say": " Refunds take 14 days."},
        {"match": "refund", "say": " Refunds take 30 days.", "low": {"30": 0.2}},
        {"say": " I do not know."}
      ]
    }

Optional top-level keys: ``name`` (default ``scripted``), ``supports_logprobs`` and
``supports_logit_bias`` (default true).

Example::

    lm = resolve_model("scripted:tests/data/handbook-script.json")
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flare.errors import ModelError
from flare.testing.scripted import Response, ScriptedLM, ScriptError

__all__ = ["FileScriptedLM", "load_script"]

_RULE_KEYS = {"match", "regex", "say", "tokens", "low", "prob"}
_TOP_KEYS = {"name", "rules", "supports_logprobs", "supports_logit_bias"}
_HINT = "see flare.testing.script_file for the format: {\"rules\": [{\"match\": \"...\", \"say\": \"...\"}]}"


class FileScriptedLM(ScriptedLM):
    """A :class:`ScriptedLM` read from a file; a prompt no rule matches is a :class:`ModelError`."""

    def __init__(self, path: Path, **options: Any) -> None:
        super().__init__(**options)
        self.path = path

    def _find(self, prompt: str) -> Response:
        try:
            return super()._find(prompt)
        except ScriptError:
            raise ModelError(
                f"{self.path}: no rule matches the prompt ending {prompt[-80:]!r}",
                "add a last rule without \"match\" that answers every other prompt",
            ) from None


def load_script(path: str | Path) -> FileScriptedLM:
    """Read a script file (format in the module docstring); any problem is a :class:`ModelError`."""
    file = Path(path).expanduser()
    if not str(path).strip():
        raise ModelError("the scripted model needs a file", "use --model scripted:PATH.json")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelError(f"scripted model file not found: {file}", "check the path after scripted:") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ModelError(f"cannot read scripted model file {file}: {err}", _HINT) from None
    except json.JSONDecodeError as err:
        raise ModelError(f"{file}: not valid JSON (line {err.lineno}: {err.msg})", _HINT) from None
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list) or not data["rules"]:
        raise ModelError(f"{file}: expected an object with a non-empty \"rules\" list", _HINT)
    _no_unknown(file, "the file", data, _TOP_KEYS)
    flags = {k: data[k] for k in ("supports_logprobs", "supports_logit_bias") if k in data}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise ModelError(f"{file}: {key} must be true or false, got {value!r}", _HINT)
    name = data.get("name", "scripted")
    if not isinstance(name, str) or not name:
        raise ModelError(f"{file}: name must be a non-empty string", _HINT)
    lm = FileScriptedLM(file, name=name, **flags)
    for n, rule in enumerate(data["rules"], start=1):
        where = f"rule {n}"
        if not isinstance(rule, dict):
            raise ModelError(f"{file}: {where} must be an object", _HINT)
        _no_unknown(file, where, rule, _RULE_KEYS)
        try:
            lm.add(_match(rule), _response(rule))
        except (TypeError, ValueError, re.error) as err:
            raise ModelError(f"{file}: {where}: {err}", _HINT) from None
    return lm


def _no_unknown(file: Path, where: str, data: dict[str, Any], known: set[str]) -> None:
    unknown = sorted(set(data) - known)
    if unknown:
        raise ModelError(f"{file}: {where} has unknown keys {unknown}", f"known keys: {', '.join(sorted(known))}")


def _match(rule: dict[str, Any]) -> str | Callable[[str], bool]:
    if "match" in rule and "regex" in rule:
        raise ValueError("give match or regex, not both")
    if "regex" in rule:
        pattern = re.compile(_text(rule, "regex"))

        def found(prompt: str) -> bool:
            return pattern.search(prompt) is not None

        return found
    return _text(rule, "match") if "match" in rule else ""


def _response(rule: dict[str, Any]) -> Response:
    if ("say" in rule) == ("tokens" in rule):
        raise ValueError("give exactly one of say or tokens")
    if "tokens" in rule:
        if "low" in rule or "prob" in rule:
            raise ValueError("low and prob go with say; tokens carry their own probabilities")
        pairs = rule["tokens"]
        if not isinstance(pairs, list) or not all(_is_pair(p) for p in pairs):
            raise ValueError("tokens must be a list of [text, probability] pairs")
        return [(str(t), float(p)) for t, p in pairs]
    low = rule.get("low", {})
    if not isinstance(low, dict) or not all(_is_prob(v) for v in low.values()):
        raise ValueError("low must map words to probabilities")
    prob = rule.get("prob", 0.95)
    if not _is_prob(prob):
        raise ValueError(f"prob must be a number, got {prob!r}")
    return ScriptedLM.sentence(_text(rule, "say"), low={str(k): float(v) for k, v in low.items()}, default_prob=prob)


def _text(rule: dict[str, Any], key: str) -> str:
    value = rule[key]
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string, got {value!r}")
    return value


def _is_prob(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_pair(item: Any) -> bool:
    return isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and _is_prob(item[1])
