"""Contract error answers: the ``{"error": {...}}`` body, its error types and request ids."""

from __future__ import annotations

import json
import secrets
from typing import Any

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
