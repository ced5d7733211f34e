"""``flare index``: build a BM25 index from a folder of .txt/.md files or a .jsonl corpus."""

from __future__ import annotations

import time
from pathlib import Path

import click

from flare.retrieve.corpus import load_corpus
from flare.retrieve.registry import build_retriever


@click.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--index", "index_spec", required=True, metavar="SPEC",
              help="Where to write the index: a directory (BM25, replaced atomically if it exists), "
                   "or dense:DIR, hybrid:DIR, milvus:URI#COLLECTION (see docs/backends.md).")
@click.option("--max-words", type=click.IntRange(min=20), default=100, show_default=True,
              help="Chunk long documents into passages of about this many words.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def index(path: Path, index_spec: str, max_words: int, quiet: bool) -> None:
    """Index PATH (a folder of .txt/.md files, or a .jsonl file) into --index."""
    t0 = time.perf_counter()
    passages = load_corpus(path, max_words=max_words)
    build_retriever(index_spec, passages, progress=not quiet)
    click.echo(
        f"indexed {len(passages)} passages into {index_spec} in {time.perf_counter() - t0:.1f}s",
        err=True,
    )
