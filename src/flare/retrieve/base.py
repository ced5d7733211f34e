"""The retriever contract the engine depends on."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from flare.retrieve.filters import Filters
from flare.types import Hit


@runtime_checkable
class Retriever(Protocol):
    """Anything that can search passages under filters.

    ``search`` must apply ``filters`` inside the search (a passage that fails them is never
    scored, returned or counted), return at most ``k`` hits best first, and return an empty list
    (not raise) when nothing matches.
    """

    name: str

    def search(self, query: str, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """The best ``k`` passages for ``query`` among those matching ``filters``."""
        ...
