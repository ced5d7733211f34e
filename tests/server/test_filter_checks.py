"""Filters the index cannot apply are refused up front through ``Retriever.check_filters``: a
request's unknown field is a 400 before any work, a key file's unknown field stops the start."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from flare.engine.loop import Flare
from flare.errors import FlareError
from flare.retrieve.corpus import load_corpus
from flare.retrieve.tantivy_index import TantivyRetriever, build_index
from flare.server import KeyStore, create_app
from tests.server.support import STAFF_KEY, LiveServer, ParrotLM, keys, write_corpus


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("filters")
    build_index(load_corpus(write_corpus(root / "corpus.jsonl")), root / "index")
    return root / "index"


def test_a_request_filter_on_an_unknown_field_is_a_400(index: Path) -> None:
    lm = ParrotLM()
    with LiveServer(create_app(Flare(lm, TantivyRetriever(index)), keys())) as server, server.client(STAFF_KEY) as c:
        r = c.post("/v1/answers", json={"question": "How are travel expenses paid?", "filters": ["colour=red"]})
        assert r.status_code == 400 and "unknown filter field 'colour'" in r.json()["error"]["message"]
        assert lm.prompts == []  # refused before the model saw anything
        ok = c.post("/v1/answers", json={"question": "How are travel expenses paid?", "filters": ["year=2026"]})
        assert ok.status_code == 200


def test_a_key_whose_filters_name_an_unknown_field_stops_the_server(index: Path) -> None:
    bad = KeyStore.from_config({"keys": [{"key": STAFF_KEY, "principal": "sam", "groups": ["staff"],
                                          "filters": ["region=eu"]}]})  # fmt: skip
    app = create_app(Flare(ParrotLM(), TantivyRetriever(index)), bad)
    with pytest.raises(FlareError, match="key file: principal 'sam': unknown filter field 'region'"), TestClient(app):
        pass  # the start-up (lifespan) fails before a request can be served
