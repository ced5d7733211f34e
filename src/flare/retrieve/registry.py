"""Retriever specs: one short string selects a retrieval backend (``--index`` of index, ask and serve).

=================================  ==========================================================
``DIR`` or ``bm25:DIR``            embedded BM25 (tantivy) index directory
``dense:DIR``                      embedded dense index (all-MiniLM-L6-v2, exact search)
``hybrid:DIR``                     ``DIR/bm25`` + ``DIR/dense`` fused with RRF
``hybrid:BM25DIR,DENSEDIR``        the same from two separate directories
``milvus:URI#COLLECTION[:MODE]``   Milvus Lite (``URI`` a ``.db`` file) or a cluster
                                   (``http://host:19530``); ``MODE`` is bm25, dense or hybrid
=================================  ==========================================================

Backends register the same way as third-party ones (:func:`register_retriever`), and each factory
imports its heavy library only when called.

Example::

    retriever = open_retriever("milvus:./milvus.db#docs:hybrid")
    build_retriever("dense:dense-index", load_corpus("docs/"))
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from flare.errors import ConfigError
from flare.retrieve.base import Retriever
from flare.types import Passage

__all__ = ["build_retriever", "open_retriever", "register_retriever", "registered_retrievers"]

OpenFactory = Callable[..., Retriever]
"""Called as ``factory(rest, **options)`` with the spec after ``prefix:``."""
BuildFactory = Callable[..., object]
"""Called as ``factory(rest, passages, **options)``; returns the backend's build info."""

_OPEN: dict[str, OpenFactory] = {}
_BUILD: dict[str, BuildFactory] = {}


def register_retriever(
    prefix: str, open: OpenFactory, build: BuildFactory | None = None, *, replace: bool = False
) -> None:
    """Make ``prefix:rest`` open (and optionally build) retrievers with these factories.

    Example::

        register_retriever("mine", lambda rest, **options: MyRetriever(rest))
        retriever = open_retriever("mine:some-collection")  # flare ask --index mine:... too
    """
    if not prefix or ":" in prefix or "/" in prefix:
        raise ConfigError(f"invalid retriever prefix {prefix!r}", "use a short name like 'milvus'")
    if prefix in _OPEN and not replace:
        raise ConfigError(f"retriever prefix {prefix!r} is already registered", "pass replace=True")
    _OPEN[prefix] = open
    _BUILD.pop(prefix, None)
    if build is not None:
        _BUILD[prefix] = build


def registered_retrievers() -> list[str]:
    return sorted(_OPEN)


def _split(spec: str) -> tuple[str, str]:
    spec = spec.strip()
    prefix, sep, rest = spec.partition(":")
    if sep and prefix in _OPEN:
        return prefix, rest
    if sep and len(prefix) > 1 and not Path(spec).exists():  # "c:" is a drive, not a prefix
        raise ConfigError(
            f"unknown retriever {prefix!r} in {spec!r}", f"use one of {', '.join(registered_retrievers())}"
        )
    return "bm25", spec  # a plain path is the embedded BM25 index


def open_retriever(spec: str, **options: Any) -> Retriever:
    """The retriever ``spec`` names; ``options`` go to the backend (e.g. ``embedder``)."""
    prefix, rest = _split(spec)
    if not rest:
        raise ConfigError(f"retriever spec {spec!r} names no index", "e.g. bm25:index or dense:DIR")
    return _OPEN[prefix](rest, **options)


def build_retriever(spec: str, passages: Iterable[Passage], **options: Any) -> object:
    """Build the index ``spec`` names from ``passages`` (what ``flare index --index SPEC`` does)."""
    prefix, rest = _split(spec)
    build = _BUILD.get(prefix)
    if build is None or not rest:
        raise ConfigError(f"cannot build {spec!r}", f"buildable: {', '.join(sorted(_BUILD))}")
    return build(rest, passages, **options)


def _milvus_target(rest: str) -> tuple[str, str, str | None]:
    uri, sep, tail = rest.rpartition("#")
    if not sep or not uri or not tail:
        raise ConfigError(f"milvus spec needs URI#COLLECTION, got {rest!r}", "e.g. milvus:./m.db#docs")
    collection, _, mode = tail.partition(":")
    return uri, collection, mode or None


def _open_bm25(rest: str, **options: Any) -> Retriever:
    from flare.retrieve.tantivy_index import TantivyRetriever

    return TantivyRetriever(rest)


def _build_bm25(rest: str, passages: Iterable[Passage], **options: Any) -> object:
    from flare.retrieve.tantivy_index import build_index

    return build_index(passages, rest, progress=options.get("progress", False))


def _open_dense(rest: str, **options: Any) -> Retriever:
    from flare.retrieve.dense import DenseRetriever

    return DenseRetriever(rest, embedder=options.get("embedder"))


def _build_dense(rest: str, passages: Iterable[Passage], **options: Any) -> object:
    from flare.retrieve.dense import build_dense_index

    return build_dense_index(passages, rest, embedder=options.get("embedder"))


def _open_hybrid(rest: str, **options: Any) -> Retriever:
    from flare.retrieve.dense import DenseRetriever
    from flare.retrieve.hybrid import HybridRetriever
    from flare.retrieve.tantivy_index import TantivyRetriever

    embedder = options.get("embedder")
    if "," in rest:
        bm25, dense = (part.strip() for part in rest.split(",", 1))
        return HybridRetriever(TantivyRetriever(bm25), DenseRetriever(dense, embedder=embedder))
    return HybridRetriever.open(rest, embedder=embedder)


def _build_hybrid(rest: str, passages: Iterable[Passage], **options: Any) -> object:
    from flare.retrieve.hybrid import build_hybrid_index

    if "," in rest:
        raise ConfigError("build a hybrid index into one directory", "use hybrid:DIR")
    return build_hybrid_index(passages, rest, embedder=options.get("embedder"))


def _open_milvus(rest: str, **options: Any) -> Retriever:
    from flare.retrieve.milvus import MilvusRetriever

    uri, collection, mode = _milvus_target(rest)
    return MilvusRetriever(uri, collection, mode=mode, embedder=options.get("embedder"))


def _build_milvus(rest: str, passages: Iterable[Passage], **options: Any) -> object:
    from flare.retrieve.milvus import build_collection

    uri, collection, mode = _milvus_target(rest)
    return build_collection(
        passages, uri, collection, dense=mode != "bm25", embedder=options.get("embedder"),
        replace=options.get("replace", False),
    )  # fmt: skip


register_retriever("bm25", _open_bm25, _build_bm25)
register_retriever("dense", _open_dense, _build_dense)
register_retriever("hybrid", _open_hybrid, _build_hybrid)
register_retriever("milvus", _open_milvus, _build_milvus)
