"""Run ``flare index`` in this process and signal it at one point of the build (crash tests).

    python tests/retrieve/crash_driver.py POINT SIGNAL index CORPUS --index DIR --quiet

POINT is where the process signals itself, right after:

* ``writing`` — the third passage went to the index writer;
* ``params`` — the new index is complete (params file written), nothing swapped yet;
* ``swap`` — the old index was renamed away and the new one is not in place yet;
* ``swapped`` — the new index is in place and the old one not deleted yet.

SIGNAL is ``KILL`` (nothing of flare runs afterwards) or ``TERM`` (flare's handler raises in the
main thread and its cleanup runs). Everything else is the real CLI on real files.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from flare.cli.main import main
from flare.retrieve import atomic, tantivy_index


def _after(real: Callable[..., Any], when: Callable[..., bool], sig: signal.Signals) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        if when(*args, **kwargs):
            os.kill(os.getpid(), sig)
        return result

    return wrapper


def arm(point: str, sig: signal.Signals) -> None:
    """Replace one function of the real code with itself plus the signal (module globals, so
    the code under test calls the wrapper)."""
    index_globals, os_globals = vars(tantivy_index), vars(os)
    if point == "writing":
        calls = iter(range(1, 1_000_000))
        index_globals["_document"] = _after(tantivy_index._document, lambda *a: next(calls) == 3, sig)
    elif point == "params":
        index_globals["write_params"] = _after(atomic.write_params, lambda *a, **k: True, sig)
    elif point == "swap":
        os_globals["replace"] = _after(os.replace, lambda src, dst: ".old-" in os.path.basename(dst), sig)
    elif point == "swapped":
        os_globals["replace"] = _after(os.replace, lambda src, dst: ".building-" in os.path.basename(src), sig)
    else:
        raise SystemExit(f"unknown point {point!r}")


if __name__ == "__main__":
    arm(sys.argv[1], signal.Signals[f"SIG{sys.argv[2]}"])
    main(sys.argv[3:])
