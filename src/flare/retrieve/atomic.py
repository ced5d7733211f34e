"""Index directories: a params file with a format version, and atomic swaps (nothing half-written)."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

from flare.errors import CorpusIndexError

PARAMS_FILE = "flare-index.json"


def swap_in(tmp: Path, target: Path) -> None:
    """Rename the finished index into place; the old one is deleted only after that worked."""
    if not target.exists():
        tmp.rename(target)
        return
    old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
    target.rename(old)
    try:
        tmp.rename(target)
    except BaseException:
        old.rename(target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def write_params(index_dir: Path, params: dict[str, Any], *, name: str = PARAMS_FILE) -> None:
    """Write an index's params file atomically (temp file, then rename)."""
    path = index_dir / name
    tmp = index_dir / f".{name}.{uuid.uuid4().hex[:8]}"
    tmp.write_text(json.dumps(params, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def read_params(
    index_dir: Path, *, fmt: str, version: int, hint: str, name: str = PARAMS_FILE
) -> dict[str, Any]:
    """The params of an index directory, checked for its format and version.

    Every failure is a :class:`CorpusIndexError` whose hint says how to (re)build the index.
    """
    path = index_dir / name
    if not index_dir.is_dir():
        raise CorpusIndexError(f"{index_dir}: no index directory here", hint)
    if not path.is_file():
        raise CorpusIndexError(f"{index_dir}: no {name}, not a flare index", hint)
    try:
        params = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CorpusIndexError(f"{path}: unreadable params file ({err})", hint) from None
    if not isinstance(params, dict) or params.get("format") != fmt:
        raise CorpusIndexError(f"{path}: not a {fmt} params file", hint)
    if params.get("version") != version:
        raise CorpusIndexError(
            f"{path}: index format version {params.get('version')!r}, this flare reads {version}",
            f"rebuild the index: {hint}",
        )
    return params
