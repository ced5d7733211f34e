"""Checks every answering route makes: authenticate, read and validate the body, build the
trusted filters and the request's settings, and turn worker failures into HTTP errors. Running
the answer and responding is :mod:`flare.server.answering`.

Nothing that depends on the request's content runs on the event loop: the body is parsed and
validated, and the filters are parsed and checked against the index, in a worker thread, so a
hostile request cannot stall ``/healthz`` or other callers. Each step is linear in the body,
which :class:`~flare.server.limits.Limits` caps.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationError
from starlette.requests import Request

from flare.config import Settings
from flare.errors import ConfigError, FilterError, InputError, UnknownFieldError
from flare.retrieve.filters import MAX_FILTER_CHARS, Filters
from flare.server.auth import KeyStore, Principal
from flare.server.errors import ApiError, unauthorized
from flare.server.limits import Limits, read_body
from flare.server.request_settings import request_settings
from flare.server.runner import Service

M = TypeVar("M", bound=BaseModel)
# Request models validate strictly ("yes" is not a bool, "5" and true are not ints) and refuse
# NaN and Infinity; filters are capped in number and length before anything parses them.
STRICT = ConfigDict(strict=True, allow_inf_nan=False)
FilterExpr = Annotated[str, StringConstraints(max_length=MAX_FILTER_CHARS)]
MAX_FILTERS = 16
UTF8_BOM = b"\xef\xbb\xbf"
_FIELD_HINT = "filter on a metadata field of this index; the operator can tell you which ones exist"


def authenticate(request: Request) -> Principal:
    keys: KeyStore = request.app.state.keys
    principal = keys.authenticate(request.headers.get("authorization"), request.headers.get("x-api-key"))
    if principal is None:
        raise unauthorized()
    request.state.principal = principal.name
    return principal


async def parse(request: Request, model: type[M]) -> M:
    """The body as ``model``: UTF-8 JSON only, validated strictly, in a worker thread."""
    limits: Limits = request.app.state.limits
    check_media_type(request.headers.get("content-type"))
    raw = await read_body(request, limits.max_body_bytes)
    return await anyio.to_thread.run_sync(validate, model, raw)


def check_media_type(content_type: str | None) -> None:
    """415 for a body declared in another charset than UTF-8 (JSON is UTF-8, RFC 8259)."""
    for param in (content_type or "").split(";")[1:]:
        name, _, value = param.partition("=")
        charset = value.strip().strip('"').lower()
        if name.strip().lower() == "charset" and charset not in ("utf-8", "utf8"):
            raise ApiError(415, "unsupported_media_type",
                           f"the body is declared as {charset[:40]!r}; send UTF-8 JSON")  # fmt: skip


def validate(model: type[M], raw: bytes) -> M:
    """Parse and validate ``raw`` (linear time; pydantic's parser also refuses lone surrogates,
    NaN and Infinity, and nesting deeper than a few hundred levels).

    A leading UTF-8 byte-order mark is ignored, as RFC 8259 allows (some Windows tools write one).
    """
    raw = raw.removeprefix(UTF8_BOM)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ApiError(400, "invalid_request_error",
                       f"the body is not UTF-8 (byte {err.start}); send UTF-8 JSON") from None  # fmt: skip
    try:
        return model.model_validate_json(raw)
    except ValidationError as err:
        problems = "; ".join(f"{_where(e['loc'])}: {e['msg']}" for e in err.errors()[:5])
        raise ApiError(400, "invalid_request_error", f"invalid request: {problems}") from None


def _where(loc: tuple[int | str, ...]) -> str:
    """A field path for an error message: a caller's key is shown quoted and cut to one short line."""
    parts = [str(p) if str(p).isidentifier() or isinstance(p, int) else repr(str(p)[:40]) for p in loc]
    return ".".join(parts) or "body"


async def trusted_filters(service: Service, principal: Principal, exprs: list[str]) -> Filters:
    """The principal's filters narrowed by the request's: a request can never widen them (C1)."""
    return await anyio.to_thread.run_sync(check_filters, service, principal, exprs)


def check_filters(service: Service, principal: Principal, exprs: list[str]) -> Filters:
    """:func:`trusted_filters` in the calling thread (it may wait for the index: not on the event loop).

    A filter on a field the index lacks is a 400 that names the field but not the fields the
    index has: the schema is the operator's business (docs/serving.md, threat model).
    """
    if len(exprs) > MAX_FILTERS:
        raise ApiError(400, "invalid_request_error", f"at most {MAX_FILTERS} filters per request")
    try:
        flt = principal.filters.narrow(Filters.parse(exprs))
    except FilterError as err:
        raise ApiError(400, "invalid_request_error", str(err)) from None
    try:
        service.retriever.check_filters(flt)  # rejects unknown fields before any work
    except UnknownFieldError as err:
        raise ApiError(400, "invalid_request_error", f"{err.message} (hint: {_FIELD_HINT})") from None
    except (FilterError, InputError) as err:
        raise ApiError(400, "invalid_request_error", str(err)) from None
    return flt


def settings_for(request: Request, given: dict[str, Any]) -> Settings:
    """The server's settings with the request's applied by each setting's request policy."""
    service: Service = request.app.state.service
    limits: Limits = request.app.state.limits
    return request_settings(service.engine.settings, limits, given)


def error_for(error: BaseException, request: Request) -> ApiError:
    """The HTTP error for a worker failure; internal details stay in the server log."""
    if isinstance(error, ApiError):
        return error
    if isinstance(error, InputError | FilterError | ConfigError):
        return ApiError(400, "invalid_request_error", str(error))
    rid = getattr(request.state, "request_id", "?")
    return ApiError(500, "internal_error", f"internal error (request {rid}); see the server log")
