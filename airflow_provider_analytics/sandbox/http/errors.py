"""Contract errors: the ``{"error": {...}}`` body, the exception routes raise, and validation messages."""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

ERROR_TYPES = {
    400: "invalid_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    410: "gone",
    412: "precondition_failed",
    413: "payload_too_large",
    422: "invalid_request",
    429: "rate_limited",
    500: "internal",
    502: "unavailable",
    503: "unavailable",
    504: "unavailable",
}
DEFAULT_MESSAGES = {
    500: "internal error",
    502: "bad gateway",
    503: "service temporarily unavailable",
    504: "gateway timeout",
    429: "too many requests",
}


def new_request_id() -> str:
    """A fresh ``X-Request-Id`` value such as ``req_9f86d081884c7d65``."""
    return f"req_{secrets.token_hex(8)}"


def error_type_for(status: int) -> str:
    """The contract's error type for a status (other 4xx are ``invalid_request``, other 5xx ``internal``).

    :param status: the HTTP status.
    """
    return ERROR_TYPES.get(status, "invalid_request" if status < 500 else "internal")


def error_body(status: int, message: str, request_id: str, details: dict[str, Any] | None = None) -> bytes:
    """The contract's JSON error body.

    :param status: the HTTP status.
    :param message: a human-readable message.
    :param request_id: the response's request id.
    :param details: machine-readable details (``{"fields": {...}}`` for bad input).
    """
    error: dict[str, Any] = {
        "type": error_type_for(status),
        "message": message,
        "request_id": request_id,
        "details": details or {},
    }
    return json.dumps({"error": error}).encode()


class ApiError(Exception):
    """An error answer with the contract body; raised anywhere in a route.

    :param status: the HTTP status.
    :param message: a human-readable message.
    :param details: machine-readable details.
    :param headers: extra response headers (e.g. ``Retry-After``).
    """

    def __init__(
        self,
        status: int,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.details = details or {}
        self.headers = headers or {}

    @classmethod
    def not_found(cls, kind: str, resource_id: str) -> ApiError:
        """404 for an unknown id, naming it.

        :param kind: resource kind, e.g. ``workflow``.
        :param resource_id: the id that was not found.
        """
        return cls(404, f"{kind} {resource_id} not found")

    @classmethod
    def invalid_fields(cls, fields: dict[str, str], status: int = 422) -> ApiError:
        """400/422 naming each bad field.

        :param fields: field path -> what is wrong with it.
        :param status: 422 for body problems (default), 400 for query problems.
        """
        listing = "; ".join(f"{name} {problem}" for name, problem in fields.items())
        return cls(status, f"invalid request: {listing}", {"fields": fields})


def field_path(location: Sequence[int | str]) -> str:
    """A pydantic error location as a readable path, e.g. ``layout[0].chart_id``.

    :param location: the pydantic ``loc`` tuple (without the ``body`` prefix).
    """
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "body"


def _problem(error: Any) -> str:
    kind = error.get("type", "")
    context = error.get("ctx") or {}
    simple = {
        "missing": "is required",
        "string_type": "must be a string",
        "int_type": "must be an integer",
        "bool_type": "must be a boolean",
        "dict_type": "must be an object",
        "list_type": "must be an array",
        "model_type": "must be an object",
        "extra_forbidden": "is not a known field",
        "string_too_short": "must not be empty",
        "too_short": "must not be empty",
    }
    if kind in simple:
        return simple[kind]
    if kind == "literal_error":
        expected = str(context.get("expected", "")).replace("'", "").replace(" or ", ", ")
        return f"must be one of {expected}"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        return str(error.get("msg", "is out of range")).replace("Input should be", "must be")
    return str(error.get("msg", "is not valid"))


def validation_fields(error: ValidationError | Sequence[Any], skip_prefix: int = 0) -> dict[str, str]:
    """Translate pydantic errors into ``{"field.path": "what is wrong"}``.

    :param error: a pydantic ``ValidationError`` or its ``errors()`` list.
    :param skip_prefix: how many leading location parts to drop (e.g. 1 for FastAPI's ``body``).
    """
    errors = error.errors() if isinstance(error, ValidationError) else error
    fields: dict[str, str] = {}
    for item in errors:
        fields.setdefault(field_path(tuple(item.get("loc", ()))[skip_prefix:]), _problem(item))
    return fields
