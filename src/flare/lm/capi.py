"""llama.cpp's C API from a binary wheel, through ctypes: no compiler needed to install flare.

The ``xllamacpp`` wheel (pinned in ``pyproject.toml``) is llama.cpp's server built as a Python
extension, and its shared object exports the whole llama.cpp C API. This module declares the
part :class:`~flare.lm.llama.LlamaCppModel` uses, under the same names as llama-cpp-python's
low-level module, so the backend runs on either library unchanged.

ctypes cannot read a C header, so the two parameter structs passed by value are declared here
for the pinned build and checked when the library is opened: their default values must sit at
the offsets declared below (:func:`check_layout`). A different build whose layout moved is a
one-line :class:`~flare.errors.ModelError`, never a crash with garbage parameters.

llama.cpp logs to stderr from its own threads; :func:`open_library` routes that log to the
``flare.llama`` logger through a callback kept alive for the life of the process.

Example::

    C = open_library()
    model = C.llama_model_load_from_file(b"model.gguf", C.llama_model_default_params())
"""

from __future__ import annotations

import ctypes
import importlib.util
import logging
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from flare.errors import ModelError

__all__ = ["XLLAMACPP_HINT", "XLLAMACPP_VERSION", "check_layout", "library_path", "open_library"]

XLLAMACPP_VERSION = "2026.10.11549"
XLLAMACPP_HINT = "pip install 'xllamacpp==2026.10.11549' (a dependency of flare-rag)"

_log = logging.getLogger("flare.llama")
_lock = threading.Lock()
_opened: SimpleNamespace | None = None

c_bool, c_char_p, c_float, c_int8, c_int32, c_uint32, c_void_p, c_size_t = (
    ctypes.c_bool, ctypes.c_char_p, ctypes.c_float, ctypes.c_int8, ctypes.c_int32, ctypes.c_uint32,
    ctypes.c_void_p, ctypes.c_size_t,
)  # fmt: skip
llama_token = c_int32


class llama_batch(ctypes.Structure):  # the C name
    _fields_ = [
        ("n_tokens", c_int32),
        ("token", ctypes.POINTER(llama_token)),
        ("embd", ctypes.POINTER(c_float)),
        ("pos", ctypes.POINTER(c_int32)),
        ("n_seq_id", ctypes.POINTER(c_int32)),
        ("seq_id", ctypes.POINTER(ctypes.POINTER(c_int32))),
        ("logits", ctypes.POINTER(c_int8)),
    ]


class llama_model_params(ctypes.Structure):  # the C name
    _fields_ = [
        ("devices", c_void_p),
        ("tensor_buft_overrides", c_void_p),
        ("n_gpu_layers", c_int32),
        ("split_mode", c_int32),
        ("load_mode", c_int32),
        ("lazy_mode", c_int32),
        ("main_gpu", c_int32),
        ("tensor_split", c_void_p),
        ("progress_callback", c_void_p),
        ("progress_callback_user_data", c_void_p),
        ("kv_overrides", c_void_p),
        ("vocab_only", c_bool),
        ("check_tensors", c_bool),
        ("use_extra_bufts", c_bool),
        ("no_host", c_bool),
        ("no_alloc", c_bool),
        ("load_mtp", c_bool),
    ]


class llama_context_params(ctypes.Structure):  # the C name
    _fields_ = [
        ("n_ctx", c_uint32),
        ("n_batch", c_uint32),
        ("n_ubatch", c_uint32),
        ("n_seq_max", c_uint32),
        ("n_rs_seq", c_uint32),
        ("n_outputs_max", c_uint32),
        ("n_outputs_max_per_seq", c_uint32),
        ("n_threads", c_int32),
        ("n_threads_batch", c_int32),
        ("ctx_type", c_int32),
        ("rope_scaling_type", c_int32),
        ("pooling_type", c_int32),
        ("attention_type", c_int32),
        ("flash_attn_type", c_int32),
        ("rope_freq_base", c_float),
        ("rope_freq_scale", c_float),
        ("yarn_ext_factor", c_float),
        ("yarn_attn_factor", c_float),
        ("yarn_beta_fast", c_float),
        ("yarn_beta_slow", c_float),
        ("yarn_orig_ctx", c_uint32),
        ("defrag_thold", c_float),
        ("cb_eval", c_void_p),
        ("cb_eval_user_data", c_void_p),
        ("type_k", c_int32),
        ("type_v", c_int32),
        ("moe_cache_size", c_size_t),
        ("abort_callback", c_void_p),
        ("abort_callback_data", c_void_p),
        ("embeddings", c_bool),
        ("offload_kqv", c_bool),
        ("no_perf", c_bool),
        ("op_offload", c_bool),
        ("swa_full", c_bool),
        ("kv_unified", c_bool),
        ("samplers", c_void_p),
        ("n_samplers", c_size_t),
        ("ctx_other", c_void_p),
    ]


# ggml_log_callback: void (*)(enum ggml_log_level level, const char * text, void * user_data)
_LOG_CALLBACK = ctypes.CFUNCTYPE(None, c_int32, c_char_p, c_void_p)
_GGML_LEVELS = {1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING, 4: logging.ERROR}

# name: (restype, argtypes)
_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "llama_backend_init": (None, []),
    "llama_log_set": (None, [_LOG_CALLBACK, c_void_p]),
    "llama_model_default_params": (llama_model_params, []),
    "llama_context_default_params": (llama_context_params, []),
    "llama_model_load_from_file": (c_void_p, [c_char_p, llama_model_params]),
    "llama_model_free": (None, [c_void_p]),
    "llama_model_get_vocab": (c_void_p, [c_void_p]),
    "llama_model_chat_template": (c_char_p, [c_void_p, c_char_p]),
    "llama_init_from_model": (c_void_p, [c_void_p, llama_context_params]),
    "llama_free": (None, [c_void_p]),
    "llama_n_batch": (c_uint32, [c_void_p]),
    "llama_get_memory": (c_void_p, [c_void_p]),
    "llama_memory_seq_rm": (c_bool, [c_void_p, c_int32, c_int32, c_int32]),
    "llama_memory_seq_cp": (None, [c_void_p, c_int32, c_int32, c_int32, c_int32]),
    "llama_memory_seq_add": (None, [c_void_p, c_int32, c_int32, c_int32, c_int32]),
    "llama_memory_can_shift": (c_bool, [c_void_p]),
    "llama_memory_clear": (None, [c_void_p, c_bool]),
    "llama_batch_get_one": (llama_batch, [ctypes.POINTER(llama_token), c_int32]),
    "llama_batch_init": (llama_batch, [c_int32, c_int32, c_int32]),
    "llama_batch_free": (None, [llama_batch]),
    "llama_decode": (c_int32, [c_void_p, llama_batch]),
    "llama_get_logits_ith": (ctypes.POINTER(c_float), [c_void_p, c_int32]),
    "llama_vocab_n_tokens": (c_int32, [c_void_p]),
    "llama_vocab_is_eog": (c_bool, [c_void_p, llama_token]),
    "llama_tokenize": (c_int32, [c_void_p, c_char_p, c_int32, ctypes.POINTER(llama_token), c_int32, c_bool, c_bool]),
    "llama_token_to_piece": (c_int32, [c_void_p, llama_token, c_char_p, c_int32, c_int32, c_bool]),
}


def library_path() -> Path:
    """The shared object of the installed ``xllamacpp`` wheel (located without importing it)."""
    spec = importlib.util.find_spec("xllamacpp")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("llama.cpp (the xllamacpp wheel) is not installed", hint=XLLAMACPP_HINT)
    folder = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(folder.glob("xllamacpp*.so"))
    if not found:
        raise ModelError(f"no llama.cpp library in {folder} (this platform's wheel has none)", hint=XLLAMACPP_HINT)
    return found[0]


def open_library(path: Path | None = None) -> SimpleNamespace:
    """The C API of the pinned llama.cpp build, declared, checked and initialised once."""
    global _opened
    with _lock:
        if _opened is not None and path is None:
            return _opened
        lib_path = path or library_path()
        try:
            lib = ctypes.CDLL(str(lib_path))
        except OSError as e:  # e.g. libgomp.so.1 missing
            raise ModelError(f"could not load llama.cpp from {lib_path}: {e}", hint=XLLAMACPP_HINT) from e
        api = SimpleNamespace(
            llama_token=llama_token,
            llama_batch=llama_batch,
            LLAMA_FLASH_ATTN_TYPE_DISABLED=0,
            library=str(lib_path),
        )
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise ModelError(
                    f"{lib_path.name} does not export {name}: not the llama.cpp build flare expects",
                    hint=XLLAMACPP_HINT,
                ) from None
            fn.restype, fn.argtypes = restype, argtypes
            setattr(api, name, fn)
        check_layout(api)
        api._log_callback = _LOG_CALLBACK(_forward_log)  # referenced here so it is never collected
        api.llama_log_set(api._log_callback, None)
        api.llama_backend_init()
        if path is None:
            _opened = api
        return api


def check_layout(api: Any) -> None:
    """A :class:`ModelError` unless the library's default parameters read back as declared.

    Each checked field is one whose default value is known; a field moved by a layout change
    reads as another field's bytes and fails the check.
    """
    model = api.llama_model_default_params()
    context = api.llama_context_default_params()
    expected: list[tuple[str, str, object]] = [
        ("model", "n_gpu_layers", -1),
        ("model", "split_mode", 1),
        ("model", "load_mode", -1),
        ("model", "lazy_mode", 1),
        ("model", "main_gpu", 0),
        ("model", "tensor_split", None),
        ("model", "vocab_only", False),
        ("model", "use_extra_bufts", True),
        ("context", "n_ctx", 512),
        ("context", "n_batch", 2048),
        ("context", "n_ubatch", 512),
        ("context", "n_seq_max", 1),
        ("context", "n_threads", 4),
        ("context", "n_threads_batch", 4),
        ("context", "ctx_type", 0),
        ("context", "rope_scaling_type", -1),
        ("context", "flash_attn_type", -1),
        ("context", "yarn_ext_factor", -1.0),
        ("context", "yarn_beta_fast", -1.0),
        ("context", "yarn_beta_slow", -1.0),
        ("context", "defrag_thold", -1.0),
        ("context", "cb_eval", None),
        ("context", "type_k", 1),  # GGML_TYPE_F16
        ("context", "type_v", 1),
        ("context", "offload_kqv", True),
        ("context", "no_perf", True),
        ("context", "op_offload", True),
        ("context", "swa_full", True),
        ("context", "kv_unified", False),
        ("context", "samplers", None),
        ("context", "n_samplers", 0),
        ("context", "ctx_other", None),
    ]
    structs = {"model": model, "context": context}
    wrong = [
        f"llama_{kind}_params.{name}={got!r} (expected {want!r})"
        for kind, name, want in expected
        if (got := getattr(structs[kind], name, "<absent>")) != want
    ]
    if wrong:
        raise ModelError(
            f"llama.cpp's parameter structs do not match flare's declarations: {', '.join(wrong[:3])}",
            hint=XLLAMACPP_HINT,
        )


def _forward_log(level: int, text: bytes | None, _user: int | None) -> None:
    if text:
        message = text.decode("utf-8", errors="replace").rstrip()
        if message:
            _log.log(_GGML_LEVELS.get(level, logging.DEBUG), "%s", message)
