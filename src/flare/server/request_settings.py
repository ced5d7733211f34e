"""Settings a request may choose, generated from the settings table, and how they combine.

Every :class:`~flare.config.Settings` field whose request policy is not ``operator`` is an
optional field of the request body (``POST /v1/answers`` and, as an extension, the chat
completions body). The server's settings (``flare serve`` flags, config file, environment) are
the base; a request's value is applied by the field's policy:

* ``free`` — any valid value (``theta``, ``trigger``, ``query`` …);
* ``lower`` — budgets: the smallest of the request's value, the server's, and for the four
  budgets in :data:`~flare.server.limits.BUDGETS` the server's :class:`Limits`; a larger value is
  clamped, because chat clients send a large ``max_tokens`` by default;
* ``stricter`` — an ordered choice: the request may move towards the strict end only; a laxer
  value is refused with 400;
* ``operator`` — not in the body at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar, get_type_hints

from pydantic import BaseModel, Field, create_model

from flare.config import SettingInfo, Settings, setting_infos
from flare.engine.methods import check_method
from flare.errors import ConfigError
from flare.server.errors import ApiError
from flare.server.limits import BUDGETS, Limits, budget_settings

M = TypeVar("M", bound=BaseModel)


def request_infos() -> tuple[SettingInfo, ...]:
    """The settings a request may set."""
    return tuple(i for i in setting_infos() if i.request != "operator")


def with_setting_fields(base: type[M], name: str) -> type[M]:
    """``base`` plus one optional body field per request-settable setting (``None`` = not given)."""
    hints = get_type_hints(Settings)
    fields: dict[str, Any] = {
        i.name: (hints[i.name] | None, Field(default=None, description=f"{i.help} (policy: {i.request})"))
        for i in request_infos()
        if i.name not in base.model_fields
    }
    return create_model(name, __base__=base, __module__=base.__module__, **fields)


def request_values(body: BaseModel) -> dict[str, Any]:
    """The settings a parsed body gives (fields left out are not included)."""
    return {i.name: getattr(body, i.name) for i in request_infos() if getattr(body, i.name, None) is not None}


def request_settings(
    base: Settings, limits: Limits, given: dict[str, Any], *, infos: Sequence[SettingInfo] | None = None
) -> Settings:
    """``base`` with a request's settings applied by each setting's policy (see the module notes).

    ``infos`` defaults to :func:`request_infos`. Raises :class:`ApiError` 400 for a value that is
    invalid, not settable by requests, or laxer than the server allows.
    """
    by_name = {i.name: i for i in (request_infos() if infos is None else infos)}
    changes: dict[str, Any] = {}
    budgets: dict[str, Any] = {}
    for name, value in given.items():
        info = by_name.get(name)
        if info is None:
            raise ApiError(400, "invalid_request_error", f"{name} cannot be set by a request")
        current = getattr(base, name)
        if name in BUDGETS:
            budgets[name] = value
        elif info.request == "lower":
            changes[name] = min(current, value)
        elif info.request == "stricter":
            if info.order.index(value) < info.order.index(current):
                allowed = ", ".join(info.order[info.order.index(current) :])
                message = f"{name}={value!r} is laxer than this server's {current!r}; choose one of: {allowed}"
                raise ApiError(400, "invalid_request_error", message)
            changes[name] = value
        else:
            changes[name] = value
    try:
        if "method" in changes:
            changes["method"] = check_method(changes["method"])
        return budget_settings(base.with_overrides(**changes), limits, budgets)
    except ConfigError as err:
        raise ApiError(400, "invalid_request_error", str(err)) from None
