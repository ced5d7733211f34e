"""Read one metadata string from a GGUF file's header, without loading the model.

llama.cpp's server reports a ChatML template for a model whose file has none, so backends that
run the server read the model's own ``tokenizer.chat_template`` here (the in-process backend
asks llama.cpp, which reports None for such a model). Format: GGUF v2/v3, little-endian.

Example::

    template = read_metadata_string("gemma-3-270m.gguf", "tokenizer.chat_template")  # None
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

from flare.errors import ModelError
from flare.lm.bundled import MODEL_HINT

__all__ = ["check_model_file", "read_metadata_string"]

_STRING, _ARRAY = 8, 9
_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}  # fixed-size value types


def check_model_file(path: Path) -> None:
    """A one-line :class:`ModelError` unless ``path`` is a file that starts like a GGUF model."""
    if not path.is_file():
        raise ModelError(f"model file not found: {path}", hint=MODEL_HINT)
    with path.open("rb") as f:
        if f.read(4) != b"GGUF":
            raise ModelError(f"{path} is not a GGUF model file", hint=MODEL_HINT)


def read_metadata_string(path: str | Path, key: str) -> str | None:
    """The string value of ``key`` in the file's metadata, or None when the key is absent."""
    with Path(path).open("rb") as f:
        if f.read(4) != b"GGUF":
            raise ModelError(f"{path} is not a GGUF model file")
        version, _tensors, count = struct.unpack("<IQQ", _read(f, 20))
        if version < 2:
            raise ModelError(f"{path}: GGUF version {version} is too old", "convert it with a recent llama.cpp")
        for _ in range(count):
            name = _string(f)
            (kind,) = struct.unpack("<I", _read(f, 4))
            if name == key:
                return _string(f) if kind == _STRING else None
            _skip(f, kind)
    return None


def _read(f: BinaryIO, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise ModelError(f"{getattr(f, 'name', 'model file')}: the GGUF header is truncated")
    return data


def _string(f: BinaryIO) -> str:
    (n,) = struct.unpack("<Q", _read(f, 8))
    return _read(f, n).decode("utf-8", errors="replace")


def _skip(f: BinaryIO, kind: int) -> None:
    if kind in _SIZES:
        f.seek(_SIZES[kind], 1)
    elif kind == _STRING:
        (n,) = struct.unpack("<Q", _read(f, 8))
        f.seek(n, 1)
    elif kind == _ARRAY:
        item, n = struct.unpack("<IQ", _read(f, 12))
        if item in _SIZES:
            f.seek(_SIZES[item] * n, 1)
        else:
            for _ in range(n):
                _skip(f, item)
    else:
        raise ModelError(f"{getattr(f, 'name', 'model file')}: unknown GGUF value type {kind}")
