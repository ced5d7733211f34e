"""API keys → principals: who is calling, which ACL groups they hold, which filters always apply.

Permissions come from trusted server state only (requirement C1): a key file read at start-up maps each
API key to a principal, its ACL groups and its default filters. A request can add conditions
(``filters: ["year=2026"]``) but every search of its answer still runs under the principal's
filters, because the request's filters are combined with :meth:`Filters.narrow`.

Key file (TOML or JSON with the same shape)::

    acl_field = "acl"              # the passage meta field holding ACL groups (default "acl")

    [[keys]]
    key = "sk-finance-0123456789"  # or key_sha256 = "<hex sha256 of the key>"
    principal = "alice"
    groups = ["finance", "staff"]
    filters = ["year>=2025"]       # optional: always applied for this key

Keys are kept only as SHA-256 digests in memory, so a key file may hold digests instead of the
keys themselves (``key_sha256``).
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flare.errors import ConfigError, FlareError
from flare.retrieve.filters import Filters

MIN_KEY_CHARS = 16  # short keys can be guessed; refuse them at start-up rather than in production
_HINT = "see docs/serving.md for the key file format"


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller. ``filters`` are its trusted constraints: ACL groups + defaults."""

    name: str
    groups: tuple[str, ...]
    filters: Filters


class KeyStore:
    """Looks up the principal of an API key.

    Example::

        keys = KeyStore.load("keys.toml")
        principal = keys.authenticate("Bearer sk-finance-0123456789")
        engine.answer(question, filters=principal.filters.narrow(request_filters))
    """

    def __init__(self, principals: Mapping[str, Principal]) -> None:
        """``principals`` maps the SHA-256 hex digest of each key to its principal."""
        self._by_digest = dict(principals)

    def __len__(self) -> int:
        return len(self._by_digest)

    @property
    def principals(self) -> tuple[Principal, ...]:
        return tuple(dict.fromkeys(self._by_digest.values()))

    @classmethod
    def load(cls, path: str | Path) -> KeyStore:
        """Read a ``.toml`` or ``.json`` key file (see the module docstring)."""
        file = Path(path)
        try:
            raw = file.read_bytes()
        except OSError as err:
            raise ConfigError(f"cannot read key file {file}: {err.strerror}", _HINT) from None
        try:
            is_json = file.suffix.lower() == ".json"
            data = json.loads(raw) if is_json else tomllib.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as err:
            raise ConfigError(f"key file {file} is not valid: {err}", _HINT) from None
        return cls.from_config(data, where=str(file))

    @classmethod
    def from_config(cls, data: Any, *, where: str = "key config") -> KeyStore:
        """Build from the parsed key file (a mapping with ``keys`` and optional ``acl_field``)."""
        if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
            raise ConfigError(f"{where}: expected a 'keys' list", _HINT)
        acl_field = data.get("acl_field", "acl")
        if not isinstance(acl_field, str) or not acl_field:
            raise ConfigError(f"{where}: acl_field must be a non-empty string", _HINT)
        principals: dict[str, Principal] = {}
        by_name: dict[str, Principal] = {}
        for i, entry in enumerate(data["keys"], start=1):
            at = f"{where}: keys[{i}]"
            digest = _digest_of(entry, at)
            principal = _principal(entry, acl_field, at)
            if digest in principals:
                raise ConfigError(f"{at}: the same key is listed twice", "give each key once")
            same = by_name.setdefault(principal.name, principal)
            if same != principal:
                # Traces are owned by the principal: two keys of one name must see the same data.
                raise ConfigError(
                    f"{at}: principal {principal.name!r} has different groups or filters under another key",
                    "give every key of one principal the same groups and filters",
                )
            principals[digest] = principal
        if not principals:
            raise ConfigError(f"{where}: no keys", "add at least one [[keys]] entry")
        return cls(principals)

    def authenticate(self, authorization: str | None, api_key: str | None = None) -> Principal | None:
        """The principal for an ``Authorization: Bearer KEY`` or ``X-API-Key`` value, or None."""
        key = api_key
        if authorization:
            scheme, _, value = authorization.strip().partition(" ")
            if scheme.lower() == "bearer" and value.strip():
                key = value.strip()
        if not key:
            return None
        return self._by_digest.get(digest(key))


def digest(key: str) -> str:
    """The SHA-256 hex digest under which a key is stored."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _digest_of(entry: Any, at: str) -> str:
    if not isinstance(entry, dict):
        raise ConfigError(f"{at}: expected a table/object", _HINT)
    key, hashed = entry.get("key"), entry.get("key_sha256")
    if (key is None) == (hashed is None):
        raise ConfigError(f"{at}: give exactly one of 'key' or 'key_sha256'", _HINT)
    if key is not None:
        if not isinstance(key, str) or len(key) < MIN_KEY_CHARS or key != key.strip():
            raise ConfigError(
                f"{at}: a key must be a string of at least {MIN_KEY_CHARS} characters, no spaces",
                "generate one with: python -c 'import secrets; print(secrets.token_urlsafe(24))'",
            )
        return digest(key)
    if not isinstance(hashed, str) or len(hashed) != 64 or any(c not in "0123456789abcdef" for c in hashed.lower()):
        raise ConfigError(f"{at}: key_sha256 must be 64 hex digits", _HINT)
    return hashed.lower()


def _principal(entry: dict[str, Any], acl_field: str, at: str) -> Principal:
    name = entry.get("principal")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{at}: 'principal' must be a non-empty string", _HINT)
    groups = entry.get("groups", [])
    if not isinstance(groups, list) or not all(isinstance(g, str) and g and g.isprintable() for g in groups):
        raise ConfigError(f"{at}: 'groups' must be a list of non-empty strings of printable characters", _HINT)
    exprs = entry.get("filters", [])
    if not isinstance(exprs, list) or not all(isinstance(e, str) for e in exprs):
        raise ConfigError(f"{at}: 'filters' must be a list of filter expressions", _HINT)
    unknown = sorted(set(entry) - {"key", "key_sha256", "principal", "groups", "filters"})
    if unknown:
        raise ConfigError(f"{at}: unknown field(s) {', '.join(unknown)}", _HINT)
    try:
        defaults = Filters.parse(exprs)
    except FlareError as err:
        raise ConfigError(f"{at}: {err.message}", err.hint) from None
    # An empty group list gives a filter that matches nothing: a key without groups sees nothing.
    trusted = Filters.any_of(acl_field, sorted(set(groups))).narrow(defaults)
    return Principal(name.strip(), tuple(sorted(set(groups))), trusted)
