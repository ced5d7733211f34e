"""The retriever contract the engine depends on."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from flare.retrieve.filters import NO_FILTERS, Filters, unknown_field
from flare.types import Hit

__all__ = ["Retriever", "check_fields"]


@runtime_checkable
class Retriever(Protocol):
    """Anything that can search passages under filters.

    ``search`` must apply ``filters`` inside the search (a passage that fails them is never
    scored, returned or counted), return at most ``k`` hits best first, and return an empty list
    (not raise) when nothing matches.

    ``check_filters`` says, before any work, whether the retriever can honour ``filters``: it
    raises :class:`~flare.errors.FilterError` for a field its passages do not have, or for any
    filter at all when it cannot filter (a wrapped retriever without metadata filtering). A
    filter it accepts here, ``search`` applies. The CLI and the server call it before loading a
    model, and the server checks each key's permission filters with it at start-up.

    Example::

        class Mine:
            name = "mine"

            def check_filters(self, filters: Filters) -> None:
                check_fields(filters, ["acl", "year"], where="my store")

            def search(self, query: str, *, k: int, filters: Filters = NO_FILTERS) -> list[Hit]:
                self.check_filters(filters)
                ...
    """

    name: str

    def search(self, query: str, *, k: int, filters: Filters = NO_FILTERS) -> list[Hit]:
        """The best ``k`` passages for ``query`` among those matching ``filters``."""
        ...

    def check_filters(self, filters: Filters) -> None:
        """Raise :class:`~flare.errors.FilterError` if ``search`` could not honour ``filters``."""
        ...


def check_fields(filters: Filters, known: Iterable[str], *, where: str = "this index") -> None:
    """Raise :class:`~flare.errors.UnknownFieldError` for the first field of ``filters`` not in ``known``.

    The one wording of the unknown-field error, shared by every backend; the field list is in
    the hint (:func:`~flare.retrieve.filters.unknown_field`), so a server can hide it.
    """
    if not filters:
        return
    names = list(known)
    for name in filters.fields:
        if name not in names:
            raise unknown_field(name, names, where=where)
