"""Index directories: a params file with a format version, and crash-safe swaps.

A build writes into ``.NAME.building-XXXXXXXX`` beside the index ``NAME`` and swaps it in with
two renames: ``NAME`` → ``.NAME.old-XXXXXXXX``, then the new directory → ``NAME``; the old
one is renamed to ``.NAME.trash-XXXXXXXX`` and deleted. Whatever kills the process, the disk
holds the previous index or the new one:

* killed before the first rename: ``NAME`` is untouched; the next build deletes the debris;
* killed between the renames: ``NAME`` is missing and ``.NAME.old-*`` is complete; opening
  the index (:func:`read_params`) or the next build renames it back;
* killed after the second rename: ``NAME`` is the new index; the next build deletes the rest.

Builds of one index are serialised by a lock file ``.NAME.lock`` (``flock``; the kernel
releases it when a process dies), so a build only ever deletes debris of builds that are dead.

Example::

    with building(Path("index")) as tmp:
        write_everything_into(tmp)          # an exception here leaves the old index in place
        write_params(tmp, {"format": "my-format", "version": 1})
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from flare.errors import CorpusIndexError

PARAMS_FILE = "flare-index.json"
SWAP_WAIT_SECONDS = 30.0  # how long opening waits for a build that is between its two renames
_KINDS = ("building", "old", "trash")
_HINT_WRITABLE = "an index is built beside its final place: choose an --index in a writable folder"


@contextlib.contextmanager
def building(target: Path) -> Iterator[Path]:
    """A new empty directory beside ``target``, swapped into place when the block succeeds.

    Takes the build lock of ``target`` (waiting for another build of it to finish), repairs
    an interrupted swap and deletes what killed builds left behind, before anything else.
    On any exception the new directory is deleted and the old index stays.
    """
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise CorpusIndexError(f"cannot create {target.parent}: {err.strerror}", _HINT_WRITABLE) from None
    with _build_lock(target, wait=None):
        _recover(target)
        _clean(target)
        tmp = _sibling(target, "building")
        try:
            tmp.mkdir()
            yield tmp
            swap_in(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def swap_in(tmp: Path, target: Path) -> None:
    """Rename the finished index ``tmp`` into place; the old one is deleted only after that worked.

    Call it holding the build lock (:func:`building` does): recovery relies on there being one
    swap of a target at a time.
    """
    if not target.exists():
        os.replace(tmp, target)
        _sync_dir(target.parent)
        return
    old = _sibling(target, "old")
    try:
        os.replace(target, old)
        os.replace(tmp, target)
        _sync_dir(target.parent)
    except BaseException:
        if old.exists() and not target.exists():
            os.replace(old, target)  # put the previous index back at once
        raise
    finally:
        if old.exists() and target.exists():
            _discard(old, target)


def recover(target: Path) -> bool:
    """Put the previous index back if a swap of ``target`` was interrupted; True if it did.

    Only acts when ``target`` is missing and a complete ``.NAME.old-*`` exists. A build that is
    between its two renames holds the lock: wait for it (up to :data:`SWAP_WAIT_SECONDS`).
    """
    if target.exists() or not _debris(target, "old"):
        return False
    try:
        with _build_lock(target, wait=SWAP_WAIT_SECONDS):
            return _recover(target)
    except OSError:  # renaming failed: the caller reports the missing index
        return False


def write_params(index_dir: Path, params: dict[str, Any], *, name: str = PARAMS_FILE) -> None:
    """Write an index's params file atomically (temp file, fsync, then rename)."""
    path = index_dir / name
    tmp = index_dir / f".{name}.{uuid.uuid4().hex[:8]}"
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(json.dumps(params, indent=2, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_params(
    index_dir: Path, *, fmt: str, version: int, hint: str, name: str = PARAMS_FILE
) -> dict[str, Any]:
    """The params of an index directory, checked for its format and version.

    An index whose swap was interrupted by a crash is restored first (:func:`recover`).
    Every failure is a :class:`CorpusIndexError` whose hint says how to (re)build the index.
    """
    path = index_dir / name
    if not index_dir.is_dir():
        recover(index_dir.absolute())
    if not index_dir.is_dir():
        raise CorpusIndexError(f"{index_dir}: no index directory here", hint)
    if not path.is_file():
        raise CorpusIndexError(f"{index_dir}: no {name}, not a flare index", hint)
    try:
        params = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        raise CorpusIndexError(f"{path}: unreadable params file ({err})", f"rebuild the index: {hint}") from None
    if not isinstance(params, dict) or params.get("format") != fmt:
        raise CorpusIndexError(f"{path}: not a {fmt} params file", hint)
    if params.get("version") != version:
        raise CorpusIndexError(
            f"{path}: index format version {params.get('version')!r}, this flare reads {version}",
            f"rebuild the index: {hint}",
        )
    return params


def _sibling(target: Path, kind: str) -> Path:
    return target.parent / f".{target.name}.{kind}-{uuid.uuid4().hex[:8]}"


def _debris(target: Path, kind: str) -> list[Path]:
    """The ``.NAME.<kind>-*`` directories beside ``target``, newest first."""
    prefix = f".{target.name}.{kind}-"
    found: list[tuple[float, Path]] = []
    with contextlib.suppress(OSError):
        for p in target.parent.iterdir():
            if p.name.startswith(prefix):
                with contextlib.suppress(OSError):
                    found.append((p.stat().st_mtime, p))
    return [p for _, p in sorted(found, reverse=True)]


def _recover(target: Path) -> bool:
    """Holding the lock: rename the newest complete ``.NAME.old-*`` back to ``target``."""
    if target.exists():
        return False
    for old in _debris(target, "old"):
        if (old / PARAMS_FILE).is_file():
            os.replace(old, target)
            _sync_dir(target.parent)
            return True
    return False


def _clean(target: Path) -> None:
    """Holding the lock: delete what killed builds left (their directories are not in use)."""
    for kind in _KINDS:
        for path in _debris(target, kind):
            _discard(path, target)


def _discard(path: Path, target: Path) -> None:
    """Delete debris of ``target``; renamed to trash first, so a half-deleted one is never restored."""
    trash = path
    if not path.name.startswith(f".{target.name}.trash-"):
        trash = _sibling(target, "trash")
        try:
            os.replace(path, trash)
        except OSError:
            return
    shutil.rmtree(trash, ignore_errors=True)


def _sync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (best effort: not every system can fsync a directory)."""
    if sys.platform == "win32":
        return
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def _build_lock(target: Path, *, wait: float | None) -> Iterator[None]:
    """Hold ``.NAME.lock`` beside ``target``; ``wait=None`` waits as long as it takes.

    The file is deleted on release. A waiter that then gets the lock of the deleted file sees
    that the path no longer names it and tries again, so two holders never overlap.
    """
    if sys.platform == "win32":  # no flock: builds of one index must not run at once
        yield
        return
    import fcntl

    path = target.parent / f".{target.name}.lock"
    deadline = None if wait is None else time.monotonic() + wait
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise CorpusIndexError(f"cannot write in {target.parent}: {err.strerror}", _HINT_WRITABLE) from None
        try:
            if deadline is None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            else:
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() > deadline:
                            raise CorpusIndexError(
                                f"{target}: another process is building this index",
                                "retry when `flare index` has finished",
                            ) from None
                        time.sleep(0.05)
            if _same_file(fd, path):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False
