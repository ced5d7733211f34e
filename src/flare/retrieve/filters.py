"""Metadata filters that can only ever be narrowed.

A :class:`Filters` value is a conjunction (AND) of conditions on passage metadata. Retrievers
apply it *inside* the search; :meth:`Filters.matches` is the reference semantics every retriever
must agree with (the contract tests check that), and the engine re-checks every hit with it as a
last line of defence.

Expression syntax (CLI ``--filter`` and :meth:`Filters.parse`)::

    year=2026          equality; on a list field (``acl``) it means "the list contains 2026"
    acl=finance|hr     any of several values
    year>=2020         ranges: >=, <=, >, <  (numbers, or ISO dates compared as strings)

Values are compared with the type of the stored field: ``year=2026`` matches a year stored as
the number 2026 and one stored as the string "2026".

Example::

    >>> trusted = Filters.parse(["acl=finance"])
    >>> request = trusted.narrow(Filters.parse(["year>=2025"]))
    >>> request.matches({"acl": ["finance", "hr"], "year": 2026})
    True
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from flare.errors import FilterError

Op = Literal["eq", "gte", "gt", "lte", "lt"]
Scalar = str | int | float | bool

_EXPR = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.\-]*)\s*(>=|<=|=|>|<)\s*(.*?)\s*$")
_OPS: dict[str, Op] = {"=": "eq", ">=": "gte", ">": "gt", "<=": "lte", "<": "lt"}
_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")


def parse_value(raw: str) -> Scalar:
    """Turn a filter value written as text into an int, float or string."""
    if _INT.match(raw):
        return int(raw)
    if _FLOAT.match(raw):
        return float(raw)
    return raw


@dataclass(frozen=True, slots=True)
class Condition:
    """One test on one metadata field. ``values`` has several items only for ``eq`` (any of)."""

    field: str
    op: Op
    values: tuple[Scalar, ...]

    def matches(self, meta: Mapping[str, Any]) -> bool:
        if self.field not in meta:
            return False
        stored = meta[self.field]
        items = stored if isinstance(stored, list | tuple) else [stored]
        return any(self._test(item) for item in items)

    def _test(self, stored: Any) -> bool:
        for wanted in self.values:
            value = coerce(wanted, stored)
            if value is None:
                continue
            try:
                if self.op == "eq" and stored == value:
                    return True
                if self.op == "gte" and stored >= value:
                    return True
                if self.op == "gt" and stored > value:
                    return True
                if self.op == "lte" and stored <= value:
                    return True
                if self.op == "lt" and stored < value:
                    return True
            except TypeError:
                continue
        return False

    def __str__(self) -> str:
        sym = {v: k for k, v in _OPS.items()}[self.op]
        return f"{self.field}{sym}{'|'.join(str(v) for v in self.values)}"


def coerce(value: Scalar, like: Any) -> Scalar | None:
    """``value`` converted to the type of a stored value ``like``, or None if it cannot be."""
    if isinstance(like, bool):
        if isinstance(value, bool):
            return value
        text = str(value).lower()
        return {"true": True, "false": False, "1": True, "0": False}.get(text)
    if isinstance(like, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return int(value) if isinstance(value, str) and _INT.match(value) else None
    if isinstance(like, float):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        return float(value) if isinstance(value, str) and _FLOAT.match(value) else None
    if isinstance(like, str):
        return str(value)
    return None


@dataclass(frozen=True, slots=True)
class Filters:
    """An AND of conditions. The only way to combine filters is :meth:`narrow`."""

    conditions: tuple[Condition, ...] = ()

    @classmethod
    def parse(cls, exprs: Iterable[str]) -> Filters:
        """Parse ``field=value`` style expressions (see the module docstring)."""
        conditions = []
        for expr in exprs:
            m = _EXPR.match(expr)
            if not m or not m.group(3):
                raise FilterError(
                    f"cannot parse filter {expr!r}",
                    "write field=value, field=a|b, or field>=value (also <=, >, <)",
                )
            name, sym, raw = m.groups()
            if raw[0] in "<>=":
                raise FilterError(f"cannot parse filter {expr!r}", "use a single operator: = >= <= > <")
            op = _OPS[sym]
            parts = raw.split("|") if op == "eq" else [raw]
            if any(not p.strip() for p in parts):
                raise FilterError(f"filter {expr!r} has an empty value", "remove the stray '|'")
            conditions.append(Condition(name, op, tuple(parse_value(p.strip()) for p in parts)))
        return cls(tuple(conditions))

    @classmethod
    def any_of(cls, field: str, values: Sequence[Scalar]) -> Filters:
        """A permission-style filter: ``field`` must contain one of ``values``.

        An empty ``values`` matches nothing (a caller with no groups sees no passages).
        """
        if not values:
            return cls((Condition(field, "eq", ()),))
        return cls((Condition(field, "eq", tuple(values)),))

    def narrow(self, other: Filters | None) -> Filters:
        """Both sets of conditions must hold: the result never matches more than ``self``."""
        if other is None or not other.conditions:
            return self
        return Filters(self.conditions + tuple(c for c in other.conditions if c not in self.conditions))

    def matches(self, meta: Mapping[str, Any]) -> bool:
        """Reference semantics: does a passage with this metadata pass every condition?"""
        return all(c.matches(meta) for c in self.conditions)

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.field for c in self.conditions))

    def __bool__(self) -> bool:
        return bool(self.conditions)

    def __str__(self) -> str:
        return " AND ".join(str(c) for c in self.conditions) or "(none)"
