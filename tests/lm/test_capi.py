"""llama.cpp's C API from the xllamacpp wheel: declared, layout-checked, logging through Python."""

from __future__ import annotations

import ctypes
import importlib.util
import logging
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from flare.errors import ConfigError, ModelError
from flare.lm import capi
from flare.lm.llama import LlamaCppModel, default_model_path, open_llama_library


def test_the_pinned_library_opens_and_its_layout_checks_out() -> None:
    api = capi.open_library()
    assert api is capi.open_library()  # opened once per process
    assert ctypes.sizeof(capi.llama_context_params) == 168 and ctypes.sizeof(capi.llama_model_params) == 80
    capi.check_layout(api)  # no error: the declared defaults read back
    assert Path(api.library).name.startswith("xllamacpp")


class _ShiftedContextParams(ctypes.Structure):
    """An older view of the struct (no n_rs_seq / n_outputs_max(_per_seq) / ctx_type): the fields
    after them move. Padded at the end so the library's 168 bytes still fit the buffer."""

    _fields_ = [*((f[0], f[1]) for f in capi.llama_context_params._fields_
                  if f[0] not in ("n_rs_seq", "n_outputs_max", "n_outputs_max_per_seq", "ctx_type")),
                ("_pad", ctypes.c_char * 64)]  # fmt: skip


def test_a_struct_layout_that_does_not_match_the_library_is_one_clear_error() -> None:
    lib = ctypes.CDLL(str(capi.library_path()))
    wrong = lib.llama_context_default_params
    wrong.restype, wrong.argtypes = _ShiftedContextParams, []
    right = lib.llama_model_default_params
    right.restype, right.argtypes = capi.llama_model_params, []
    assert ctypes.sizeof(_ShiftedContextParams) >= ctypes.sizeof(capi.llama_context_params)
    api = SimpleNamespace(llama_context_default_params=wrong, llama_model_default_params=right)
    with pytest.raises(ModelError, match="parameter structs do not match flare's declarations") as err:
        capi.check_layout(api)
    assert "\n" not in err.value.message and err.value.hint == capi.XLLAMACPP_HINT


def test_a_missing_wheel_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelError, match="xllamacpp wheel\\) is not installed") as err:
        capi.library_path()
    assert err.value.hint == "pip install 'xllamacpp==2026.10.11549' (a dependency of flare-rag)"


def test_a_file_that_is_not_the_library_is_refused_without_a_crash(tmp_path: Path) -> None:
    fake = tmp_path / "xllamacpp.abi3.so"
    fake.write_bytes(b"\x7fELF not really")
    with pytest.raises(ModelError, match=r"could not load llama\.cpp from"):
        capi.open_library(fake)


def test_the_library_choice_is_checked() -> None:
    with pytest.raises(ConfigError, match=r"unknown llama\.cpp library 'cuda'"):
        open_llama_library("cuda")
    if importlib.util.find_spec("llama_cpp") is None:
        with pytest.raises(ModelError, match="llama-cpp-python is not installed") as err:
            open_llama_library("native")
        assert err.value.hint == "pip install 'flare-rag[native]'"
        assert open_llama_library("auto") is capi.open_library()  # auto: the binary wheel


@pytest.mark.model
def test_llama_cpp_log_reaches_the_flare_logger_only_when_verbose(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="flare.llama")
    lm = LlamaCppModel(default_model_path(), n_threads=1, n_ctx=256, n_contexts=1, verbose=True, library="xllamacpp")
    try:
        lm.complete("Hello", max_tokens=1)
    finally:
        lm.close()
    assert any(r.name == "flare.llama" and "llama" in r.getMessage() for r in caplog.records)


@pytest.mark.model
def test_a_quiet_load_prints_nothing_from_llama_cpp() -> None:
    code = ("from flare.lm.llama import LlamaCppModel, default_model_path\n"
            "lm = LlamaCppModel(default_model_path(), n_threads=1, n_ctx=256, n_contexts=1)\n"
            "print(lm.complete('Hello', max_tokens=2).generated_tokens)\n")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() in {"0", "1", "2"}
    assert out.stderr == "", out.stderr[-500:]
