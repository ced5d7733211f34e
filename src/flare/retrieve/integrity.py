"""File checksums of an index directory, recorded in its params file and checked on open.

A build records the size and SHA-256 of every file it wrote (``"files"`` in the params file).
Opening checks the sizes always (a truncated or deleted file costs one ``stat``) and the digests
when asked (a flipped byte anywhere; about 2 s per GB read). Without this a flipped byte in a
postings file is accepted silently and changes rankings, and one in a norms file crashes the
search library. An index written before checksums existed has no ``"files"`` and is opened as
before.

Example::

    params["files"] = digests(index_dir)
    ...
    check_files(index_dir, params.get("files"), full=True, hint="rebuild: flare index ...")
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from flare.errors import CorpusIndexError

_CHUNK = 1 << 20


def digests(index_dir: Path, *, skip: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """``{name: {"bytes": size, "sha256": hex}}`` of the files in ``index_dir``.

    Lock files and the names in ``skip`` (the params file itself) are left out.
    """
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(index_dir.iterdir()):
        if not path.is_file() or path.name in skip or path.name.endswith(".lock") or path.name.startswith(".flare"):
            continue
        out[path.name] = {"bytes": path.stat().st_size, "sha256": _sha256(path)}
    return out


def check_files(index_dir: Path, recorded: Any, *, full: bool, hint: str) -> None:
    """Raise :class:`CorpusIndexError` if a recorded file is missing, has another size or
    (with ``full``) another digest. ``recorded=None`` (an older index) checks nothing."""
    if recorded is None:
        return
    if not isinstance(recorded, dict) or not all(isinstance(v, dict) for v in recorded.values()):
        raise CorpusIndexError(f"{index_dir}: the params file's file list is malformed", hint)
    for name, want in sorted(recorded.items()):
        path = index_dir / name
        if "/" in name or "\\" in name or name in ("", ".", ".."):
            raise CorpusIndexError(f"{index_dir}: the params file names {name!r}, not a file of the index", hint)
        try:
            size = path.stat().st_size
        except OSError:
            raise CorpusIndexError(f"{index_dir}: file {name} is missing; the index is damaged", hint) from None
        if size != want.get("bytes"):
            raise CorpusIndexError(
                f"{index_dir}: file {name} has {size} bytes, {want.get('bytes')} were written; the index is damaged",
                hint,
            )
        try:
            same = not full or _sha256(path) == want.get("sha256")
        except OSError as err:
            raise CorpusIndexError(f"{index_dir}: cannot read {name}: {err.strerror}", hint) from None
        if not same:
            raise CorpusIndexError(f"{index_dir}: file {name} fails its checksum; the index is damaged", hint)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()
