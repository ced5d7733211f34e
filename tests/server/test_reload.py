"""Index reload without a restart: a rebuilt index is served, answers in flight keep theirs.

The index is rebuilt with ``build_index`` (the atomic swap ``flare index`` does) under a running
server. The parrot model repeats the passages it is given, and a caller's searches wait behind a
gate the test opens, so an answer is held in flight across the swap — its search not yet run —
for as long as the test needs.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from flare.config import Settings
from flare.engine.loop import Flare
from flare.engine.prompts import PromptTemplate
from flare.retrieve.atomic import building
from flare.retrieve.corpus import load_corpus
from flare.retrieve.filters import NO_FILTERS, Filters
from flare.retrieve.tantivy_index import TantivyRetriever, build_index
from flare.server import Limits, create_app
from flare.server.reload import IndexSource, signature, watch_paths
from flare.types import Hit
from tests.server.support import CORPUS, STAFF_KEY, GatedLM, LiveServer, keys, wait_until, write_corpus
from tests.server.test_admission import Streamer

QUESTION = "How are travel expenses reimbursed after receipts?"
OLD_IDS = {d["id"] for d in CORPUS}
NEW_CORPUS = [
    {"id": "travel-2027", "title": "Travel policy 2027",
     "text": "Travel expenses are reimbursed within five working days of submitting receipts.",
     "meta": {"acl": ["staff"], "year": 2027}},
    {"id": "laptops-2027", "title": "Laptop policy 2027",
     "text": "Laptops are replaced after three years; travel receipts go to the new portal.",
     "meta": {"acl": ["staff"], "year": 2027}},
]  # fmt: skip


def _build(path: Path, docs: list[dict[str, Any]], tmp: Path) -> None:
    corpus = tmp / f"corpus-{len(docs)}-{docs[0]['id']}.jsonl"
    if docs is CORPUS:
        write_corpus(corpus)
    else:
        corpus.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    build_index(load_corpus(corpus), path)


class GatedRetriever(TantivyRetriever):
    """The real index; the first one opened makes searches under a caller's filters wait until
    ``gate`` is set (an index opened by a reload, and the probe's unfiltered search, never wait)."""

    gate = threading.Event()
    opened = 0

    def __init__(self, index_dir: Path) -> None:
        super().__init__(index_dir)
        GatedRetriever.opened += 1
        self.gated = GatedRetriever.opened == 1

    def search(self, query: str, *, k: int, filters: Filters = NO_FILTERS) -> list[Hit]:
        if self.gated and filters.conditions:
            assert self.gate.wait(60), "the test never opened the search gate"
        return super().search(query, k=k, filters=filters)


@pytest.fixture()
def lm() -> Iterator[GatedLM]:
    lm = GatedLM()
    GatedRetriever.gate.set()
    GatedRetriever.opened = 0
    yield lm
    lm.gate.set()
    GatedRetriever.gate.set()


def _serve(path: Path, lm: GatedLM, poll: float) -> LiveServer:
    return LiveServer(_app(path, lm, poll))


def _app(path: Path, lm: GatedLM, poll: float) -> Starlette:
    source = IndexSource(lambda: GatedRetriever(path), watch=watch_paths(str(path)))
    # trigger=min: the parrot's first call is a draft without documents, so an answer held at the
    # gate has not searched yet, and every search it makes comes after the swap.
    settings = Settings(theta=0.5, trigger="min", verify="off", max_sentences=2)
    engine = Flare(lm, source.open(), settings, template=PromptTemplate.plain())
    limits = Limits(max_concurrency=4, index_poll_seconds=poll, heartbeat_seconds=0.2)
    return create_app(engine, keys(), limits, index=source)


def _generation(http: httpx.Client) -> int:
    return int(http.get("/healthz").json()["index"]["generation"])


def _source_ids(answer: dict[str, Any]) -> set[str]:
    return {s["id"] for s in answer["sources"]}


def _done(stream: Streamer) -> dict[str, Any]:
    event, data = stream.events()[-1]
    assert event == "done", stream.events()
    found: dict[str, Any] = json.loads(data)
    return found


def test_a_rebuilt_index_is_served_and_answers_in_flight_finish_on_theirs(tmp_path: Path, lm: GatedLM) -> None:
    path = tmp_path / "idx"
    _build(path, CORPUS, tmp_path)
    lm.gate.set()
    GatedRetriever.gate.clear()
    with _serve(path, lm, poll=0.05) as live, live.client(STAFF_KEY) as http:
        held = Streamer(live.url)  # its first search waits at the gate, on the old index
        held.start()
        wait_until(lambda: http.get("/healthz").json()["in_flight"] == 1, "an answer in flight")
        _build(path, NEW_CORPUS, tmp_path)  # swapped in under the running answer
        wait_until(lambda: _generation(http) == 2, "the rebuilt index is picked up")
        after = http.post("/v1/answers", json={"question": QUESTION}).json()  # while the old one runs
        assert http.get("/healthz").json()["in_flight"] == 1
        GatedRetriever.gate.set()
        held.join(120)
        health = http.get("/healthz").json()
        metrics = http.get("/metrics").text
    old = _done(held)
    assert old["sources"] and _source_ids(old) <= OLD_IDS  # every search of it hit the old index
    assert after["sources"] and _source_ids(after) <= {d["id"] for d in NEW_CORPUS}
    assert "five working days" in after["answer"]
    assert health["index"]["generation"] == 2 and "refused" not in health["index"]
    assert 'flare_index_reloads_total{outcome="loaded"} 1' in metrics
    assert "flare_index_generation 2" in metrics


def test_a_damaged_rebuild_is_refused_and_the_old_index_keeps_serving(tmp_path: Path, lm: GatedLM) -> None:
    path = tmp_path / "idx"
    _build(path, CORPUS, tmp_path)
    good_new = tmp_path / "good-new"
    _build(good_new, NEW_CORPUS, tmp_path)
    lm.gate.set()
    with _serve(path, lm, poll=0.05) as live, live.client(STAFF_KEY) as http:
        with building(path) as tmp:  # a swap of a damaged build: same sizes, other bytes
            shutil.copytree(good_new, tmp, dirs_exist_ok=True)
            victim = max((p for p in tmp.iterdir() if p.suffix in (".idx", ".store")), key=lambda p: p.stat().st_size)
            data = bytearray(victim.read_bytes())
            data[len(data) // 2] ^= 0xFF
            victim.write_bytes(bytes(data))
        wait_until(lambda: 'outcome="refused"} 1' in http.get("/metrics").text, "the damaged index is refused")
        health = http.get("/healthz").json()
        still = http.post("/v1/answers", json={"question": QUESTION}).json()
        _build(path, NEW_CORPUS, tmp_path)  # then a good rebuild
        wait_until(lambda: _generation(http) == 2, "the good rebuild is picked up")
        fixed = http.post("/v1/answers", json={"question": QUESTION}).json()
        healed = http.get("/healthz").json()
    assert health["status"] == "ok" and health["index"]["generation"] == 1 and "refused" in health["index"]
    assert str(path) not in str(health)  # no paths on the unauthenticated health check
    assert still["sources"] and _source_ids(still) <= OLD_IDS
    assert fixed["sources"] and _source_ids(fixed) <= {d["id"] for d in NEW_CORPUS}
    assert "refused" not in healed["index"]


def test_with_polling_off_a_request_reloads(tmp_path: Path, lm: GatedLM) -> None:
    """What SIGHUP does in ``flare serve``: ``app.state.reloader.request()``."""
    path = tmp_path / "idx"
    _build(path, CORPUS, tmp_path)
    lm.gate.set()
    app = _app(path, lm, poll=0)
    with LiveServer(app) as live, live.client(STAFF_KEY) as http:
        _build(path, NEW_CORPUS, tmp_path)
        before = http.post("/v1/answers", json={"question": QUESTION}).json()
        app.state.reloader.request()
        wait_until(lambda: _generation(http) == 2, "the requested reload happened")
        after = http.post("/v1/answers", json={"question": QUESTION}).json()
    assert _source_ids(before) <= OLD_IDS and _source_ids(after) <= {d["id"] for d in NEW_CORPUS}


def test_watch_paths_and_signature(tmp_path: Path) -> None:
    assert watch_paths("idx") == [Path("idx").absolute()]
    assert watch_paths("dense:/x/d") == [Path("/x/d")]
    assert watch_paths("hybrid:/x/a,/x/b") == [Path("/x/a"), Path("/x/b")]
    assert watch_paths("milvus:http://127.0.0.1:19530#docs") == []
    path = tmp_path / "idx"
    assert signature([path]) is None  # missing: mid-swap, look again later
    _build(path, CORPUS, tmp_path)
    first = signature([path])
    assert first is not None and signature([path]) == first
    _build(path, NEW_CORPUS, tmp_path)
    assert signature([path]) not in (None, first)
