"""O6: served traces live in SQLite, survive a restart, stay owner-only and are retained by rule."""

from __future__ import annotations

import sqlite3
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from flare.config import Settings
from flare.engine.loop import Flare
from flare.engine.prompts import PromptTemplate
from flare.errors import ConfigError
from flare.retrieve.tantivy_index import TantivyRetriever
from flare.server import Limits, create_app
from flare.server.trace_sql import PRUNE_EVERY, SqliteTraceStore
from flare.server.traces import MemoryTraceStore, default_trace_path, open_trace_store
from tests.server.support import FINANCE_KEY, STAFF_KEY, LiveServer, ParrotLM, keys

QUESTION = "How are travel expenses reimbursed after receipts?"


def _trace(n: int) -> dict[str, Any]:
    return {"version": "flare.trace/1", "trace_id": f"t{n:04d}", "question": f"q{n} 中文", "steps": []}


def _server(index_dir: Path, traces: str) -> LiveServer:
    engine = Flare(ParrotLM(), TantivyRetriever(index_dir), Settings(theta=0.5, max_sentences=2),
                   template=PromptTemplate.plain())  # fmt: skip
    return LiveServer(create_app(engine, keys(), Limits(), traces=traces))


def test_traces_survive_a_restart_and_stay_owner_only(index_dir: Path, tmp_path: Path) -> None:
    spec = f"sqlite:{tmp_path / 'state' / 'traces.sqlite'}"
    with _server(index_dir, spec) as live, live.client(FINANCE_KEY) as http:
        answer = http.post("/v1/answers", json={"question": QUESTION}).json()
        served = http.get(f"/v1/traces/{answer['trace_id']}").json()
        assert http.get("/healthz").json()["trace_store"] == "sqlite"
    with _server(index_dir, spec) as live:  # a new process would see the same file
        with live.client(FINANCE_KEY) as http:
            again = http.get(f"/v1/traces/{answer['trace_id']}")
        with live.client(STAFF_KEY) as http:
            other = http.get(f"/v1/traces/{answer['trace_id']}")
            missing = http.get("/v1/traces/0123456789abcdef0123456789abcdef")
    assert again.status_code == 200 and again.json() == served
    assert served["question"] == QUESTION and served["steps"]
    assert other.status_code == missing.status_code == 404 and other.json() == missing.json()


def test_one_row_per_answer_with_its_owner(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    store = SqliteTraceStore(path)
    store.put("fay", _trace(1))
    store.put("sam", _trace(1))  # the same id again: ignored, the first owner keeps it
    store.put("sam", _trace(2))
    assert store.get("t0001", "fay") == _trace(1) and store.get("t0001", "sam") is None
    assert store.get("t0002", "sam") == _trace(2) and store.count() == 2
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        rows = db.execute("SELECT trace_id, owner FROM flare_traces ORDER BY trace_id").fetchall()
    assert rows == [("t0001", "fay"), ("t0002", "sam")]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # traces hold drafts and passages


def test_retention_by_count_keeps_the_newest(tmp_path: Path) -> None:
    store = SqliteTraceStore(tmp_path / "t.sqlite", max_traces=5)
    for n in range(PRUNE_EVERY):  # the PRUNE_EVERY-th write runs retention
        store.put("fay", _trace(n))
    assert store.count() == 5
    assert store.get(f"t{PRUNE_EVERY - 1:04d}", "fay") is not None and store.get("t0000", "fay") is None
    store.put("fay", _trace(PRUNE_EVERY))
    store.prune()
    assert store.count() == 5
    store.close()
    reopened = SqliteTraceStore(tmp_path / "t.sqlite", max_traces=2)  # retention also at start-up
    assert reopened.count() == 2
    reopened.close()


def test_retention_by_age_hides_then_deletes(tmp_path: Path) -> None:
    store = SqliteTraceStore(tmp_path / "t.sqlite", max_age_days=0.2 / 86400)  # 0.2 seconds
    store.put("fay", _trace(1))
    assert store.get("t0001", "fay") is not None
    time.sleep(0.3)
    assert store.get("t0001", "fay") is None  # expired: never served, even before deletion
    assert store.count() == 1
    store.prune()
    assert store.count() == 0
    store.close()


def test_memory_store_has_the_same_rules() -> None:
    store = MemoryTraceStore(max_traces=2)
    for n in range(3):
        store.put("fay", _trace(n))
    assert store.get("t0000", "fay") is None and store.get("t0002", "fay") == _trace(2)
    assert store.get("t0002", "sam") is None
    assert open_trace_store("memory").name == "memory"


def test_bad_stores_fail_at_start_with_a_hint(tmp_path: Path) -> None:
    garbage = tmp_path / "not-a-db.sqlite"
    garbage.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ConfigError, match="cannot open the trace store") as err:
        open_trace_store(str(garbage))
    assert err.value.hint and "sqlite:PATH" in err.value.hint
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="cannot open the trace store"):
        open_trace_store(f"sqlite:{blocker}/traces.sqlite")  # a file where a folder must go
    with pytest.raises(ConfigError, match="unknown trace store 'mysql'"):
        open_trace_store("mysql://db/flare")
    with pytest.raises(ConfigError, match="empty"):
        open_trace_store(" ")
    with pytest.raises(ConfigError, match="max_traces"):
        open_trace_store("memory", max_traces=0)
    with pytest.raises(ConfigError, match="max_age_days"):
        open_trace_store("memory", max_age_days=0)


def test_a_store_from_a_newer_flare_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    SqliteTraceStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE flare_trace_meta SET value = '2' WHERE key = 'schema'")
    with pytest.raises(ConfigError, match="schema version 2"):
        SqliteTraceStore(path)


def test_default_path_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_trace_path() == tmp_path / "flare" / "traces.sqlite"


def test_a_store_failure_loses_the_trace_not_the_answer(index_dir: Path, tmp_path: Path) -> None:
    store = SqliteTraceStore(tmp_path / "t.sqlite")
    engine = Flare(ParrotLM(), TantivyRetriever(index_dir), Settings(theta=0.5, max_sentences=2),
                   template=PromptTemplate.plain())  # fmt: skip
    with LiveServer(create_app(engine, keys(), Limits(), traces=store)) as live, live.client(FINANCE_KEY) as http:
        store.close()  # the database goes away under the running server
        answer = http.post("/v1/answers", json={"question": QUESTION})
        metrics = http.get("/metrics").text
    assert answer.status_code == 200 and answer.json()["answer"]
    assert "flare_trace_store_errors_total 1" in metrics
