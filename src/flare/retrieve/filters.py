"""Metadata filters that can only ever be narrowed.

A :class:`Filters` value is a conjunction (AND) of conditions on passage metadata; the empty one,
:data:`NO_FILTERS`, is how "no filter" is written everywhere. Retrievers
apply it *inside* the search; :meth:`Filters.matches` is the reference semantics every retriever
must agree with (the contract tests check that), and the engine re-checks every hit with it as a
last line of defence.

Expression syntax (CLI ``--filter`` and :meth:`Filters.parse`)::

    year=2026          equality; on a list field (``acl``) it means "the list contains 2026"
    acl=finance|hr     any of several values
    year>=2020         ranges: >=, <=, >, <  (numbers, or ISO dates compared as strings)

Values are compared with the type of the stored field: ``year=2026`` matches a year stored as
the number 2026 and one stored as the string "2026".

Parsing takes time linear in the expression (one scan for the operator, no backtracking
pattern), and an expression is at most :data:`MAX_FILTER_CHARS` characters with at most
:data:`MAX_FILTER_VALUES` alternatives, so a filter from a request cannot cost more than a few
microseconds. Control characters and lone surrogates are rejected: no index can store them.

Example::

    >>> trusted = Filters.parse(["acl=finance"])
    >>> request = trusted.narrow(Filters.parse(["year>=2025"]))
    >>> request.matches({"acl": ["finance", "hr"], "year": 2026})
    True
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from flare.errors import FilterError, UnknownFieldError
from flare.text import whole_number

Op = Literal["eq", "gte", "gt", "lte", "lt"]
Scalar = str | int | float | bool

MAX_FILTER_CHARS = 1_000  # a field name, an operator and a few values; group lists come from key files
MAX_FILTER_VALUES = 100  # alternatives in one field=a|b|… (each one is a clause of the search)
SYMBOLS: dict[Op, str] = {"eq": "=", "gte": ">=", "gt": ">", "lte": "<=", "lt": "<"}
"""How each operator is written in a filter expression (``year>=2025``)."""
_OPS: dict[str, Op] = {sym: op for op, sym in SYMBOLS.items()}
_COMPARE: dict[Op, Callable[[Any, Any], Any]] = {
    "eq": operator.eq, "gte": operator.ge, "gt": operator.gt, "lte": operator.le, "lt": operator.lt
}  # fmt: skip
# Every pattern here is matched whole (fullmatch) and has no nested or overlapping repetition,
# so the regex engine does a bounded amount of work per character.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")
_UNSAFE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\ud800-\udfff]")  # control characters (not tab), lone surrogates
_MAX_INT_DIGITS = 4_000  # int() refuses more than 4,300 digits (CPython's guard against slow parsing)
_SYNTAX_HINT = "write field=value, field=a|b, or field>=value (also <=, >, <)"


def holds(op: Op, stored: Any, value: Any) -> bool:
    """Whether ``stored <op> value`` holds, by Python's comparison (a ``TypeError`` propagates).

    The one definition of the operators: :class:`Condition` and every backend that checks a
    condition itself (tantivy on booleans, Milvus) use it, so they cannot disagree.
    """
    return bool(_COMPARE[op](stored, value))


def parse_value(raw: str) -> Scalar:
    """Turn a filter value written as text into an int, float or string."""
    if _INT.fullmatch(raw):
        return int(raw) if len(raw) <= _MAX_INT_DIGITS else raw
    if _FLOAT.fullmatch(raw):
        return float(raw)
    return raw


def _written_number(raw: str) -> float | None:
    """A number written the Chinese way (``2026年``, ``二〇二六``, ``二〇二六年``, ``十二月``): its
    value when ``raw`` is exactly one number with an optional 年/月/日/号, else None."""
    core = raw[:-1] if raw[-1:] in ("年", "月", "日", "号") else raw
    if not core or len(core) > 12:
        return None
    return whole_number(core)


def split_expression(expr: str) -> tuple[str, str, str] | None:
    """``(field, operator, value)`` of one expression, or None if it has no operator.

    Linear time: the operator is the first of ``<``, ``>``, ``=`` (a field name holds none of
    them), and everything else is ``str.find``/``str.strip`` over the text once.
    """
    found = [i for i in (expr.find("<"), expr.find(">"), expr.find("=")) if i >= 0]
    if not found:
        return None
    at = min(found)
    sym = expr[at : at + 2] if expr[at] in "<>" and expr[at + 1 : at + 2] == "=" else expr[at]
    return expr[:at].strip(), sym, expr[at + len(sym) :].strip()


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
                if holds(self.op, stored, value):
                    return True
            except TypeError:
                continue
        return False

    def __str__(self) -> str:
        return f"{self.field}{SYMBOLS[self.op]}{'|'.join(str(v) for v in self.values)}"


def _condition(expr: str) -> Condition:
    if not isinstance(expr, str):
        raise FilterError(f"a filter must be text, got {type(expr).__name__}", _SYNTAX_HINT)
    if len(expr) > MAX_FILTER_CHARS:
        raise FilterError(
            f"a filter is {len(expr)} characters long, the limit is {MAX_FILTER_CHARS}",
            "filter on a short value; put long lists of groups in the key file",
        )
    shown = _shown(expr)
    if _UNSAFE.search(expr):
        raise FilterError(f"filter {shown} holds a control character or invalid Unicode",
                          "write the value as plain text")  # fmt: skip
    parts = split_expression(expr)
    if parts is None or not parts[2] or not _NAME.fullmatch(parts[0]):
        raise FilterError(f"cannot parse filter {shown}", _SYNTAX_HINT)
    name, sym, raw = parts
    if raw[0] in "<>=":
        raise FilterError(f"cannot parse filter {shown}", "use a single operator: = >= <= > <")
    op = _OPS[sym]
    values = raw.split("|") if op == "eq" else [raw]
    if len(values) > MAX_FILTER_VALUES:
        raise FilterError(f"filter {shown} has {len(values)} alternatives, the limit is {MAX_FILTER_VALUES}",
                          "split the filter, or give the principal a group in the key file")  # fmt: skip
    if any(not v.strip() for v in values):
        raise FilterError(f"filter {shown} has an empty value", "remove the stray '|'")
    return Condition(name, op, tuple(parse_value(v.strip()) for v in values))


def unknown_field(name: str, known: Iterable[str], *, where: str = "this index") -> UnknownFieldError:
    """The error for a filter on a field the index does not have.

    The field names are in the hint, not the message: a server passes the message to callers
    and keeps the index's schema to itself (see docs/serving.md, threat model).
    """
    fields = ", ".join(known) or "(none)"
    return UnknownFieldError(
        f"unknown filter field {name!r}",
        f"{where} has meta fields: {fields}; filter on one of them, or rebuild the index with that field in meta",
    )


def _shown(expr: str) -> str:
    """The expression for an error message, cut so that one line stays readable."""
    return repr(expr if len(expr) <= 80 else expr[:77] + "...")


def coerce(value: Scalar, like: Any) -> Scalar | None:
    """``value`` converted to the type of a stored value ``like``, or None if it cannot be.

    Against a number, text written the Chinese way counts (``year=2026年`` and ``year=二〇二六``
    match a year stored as 2026); against text it stays the text it was.
    """
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
        if isinstance(value, str) and _INT.fullmatch(value) and len(value) <= _MAX_INT_DIGITS:
            return int(value)
        written = _written_number(value) if isinstance(value, str) else None
        return int(written) if written is not None and written.is_integer() else None
    if isinstance(like, float):
        if isinstance(value, int) and not isinstance(value, bool):
            return float(value) if abs(value) < 2**1023 else (math.inf if value > 0 else -math.inf)
        if isinstance(value, float):
            return value
        if isinstance(value, str) and _FLOAT.fullmatch(value):
            return float(value)
        return _written_number(value) if isinstance(value, str) else None
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
        return cls(tuple(_condition(expr) for expr in exprs))

    @classmethod
    def any_of(cls, field: str, values: Sequence[Scalar]) -> Filters:
        """A permission-style filter: ``field`` must contain one of ``values``.

        An empty ``values`` matches nothing (a caller with no groups sees no passages).
        """
        if not values:
            return cls((Condition(field, "eq", ()),))
        return cls((Condition(field, "eq", tuple(values)),))

    def narrow(self, other: Filters) -> Filters:
        """Both sets of conditions must hold: the result never matches more than ``self``."""
        if not other.conditions:
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


NO_FILTERS: Final = Filters()
"""No filter: the empty conjunction, which every passage passes, and falsy.

The one spelling of "no filter" across flare: the engine's runs, the :class:`Retriever` protocol's
default, the adapters. A retriever written for an older protocol that took ``Filters | None``
still fits: it gets this value, which tests false like ``None`` did.
"""
