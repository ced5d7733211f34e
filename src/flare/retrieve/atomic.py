"""Atomic index directories: build beside the target, then swap it in (nothing half-written)."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path


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
