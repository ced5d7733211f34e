"""HTTP errors of the server, in the OpenAI error shape so chat clients report them well.

Every error response is ``{"error": {"message", "type", "code"}}``. Client mistakes (bad JSON,
bad filters, budgets) say what is wrong; internal failures say only "internal error" with a
request id, and the details go to the server log: an error message must not carry anything
about passages the caller may not see.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import JSONResponse


class ApiError(Exception):
    """An error answered with ``status`` and an OpenAI-style JSON body."""

    def __init__(self, status: int, type_: str, message: str, *, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.type = type_
        self.message = message
        self.headers = dict(headers or {})

    def body(self) -> dict[str, dict[str, str | None]]:
        return {"error": {"message": self.message, "type": self.type, "code": self.type}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def unauthorized() -> ApiError:
    return ApiError(
        401,
        "invalid_api_key",
        "missing or invalid API key; send Authorization: Bearer KEY",
        headers={"WWW-Authenticate": "Bearer"},
    )


def not_found(what: str) -> ApiError:
    return ApiError(404, "not_found", f"{what} not found")
