"""The one place that maps an HTTP error answer onto the exception tree of ``errors.py``.

A status picks the class; the contract's error body (``{"error": {"type", "message", "request_id", "details"}}``)
fills it, every text folded, capped and scrubbed of secrets (``clean_text``); a body that is not the platform's
(a proxy's page, an empty body) still gives an error that names the status and the request id when there is one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from airflow_provider_analytics.wire._contract import HEADER_REQUEST_ID
from airflow_provider_analytics.wire._redaction import scrub_value
from airflow_provider_analytics.wire.errors import (
    AnalyticsAPIError,
    ConflictError,
    ForbiddenError,
    GoneError,
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    PreconditionFailedError,
    RateLimitedError,
    ServerError,
    UnauthenticatedError,
    clean_text,
    connection_advice,
)

__all__ = ["api_error_from_response", "error_class_for", "platform_error_object"]

_ERROR_BY_STATUS: dict[int, type[AnalyticsAPIError]] = {
    400: InvalidRequestError,
    401: UnauthenticatedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    412: PreconditionFailedError,
    413: PayloadTooLargeError,
    422: InvalidRequestError,
    429: RateLimitedError,
}
_DEFAULT_TYPE_BY_STATUS = {
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
}


def _short_text(value: object) -> str | None:
    return clean_text(value, 200) if isinstance(value, (str, int)) and not isinstance(value, bool) and value else None


def error_class_for(status: int) -> type[AnalyticsAPIError]:
    """Return the exception class for an HTTP error status."""
    if status >= 500:
        return ServerError
    return _ERROR_BY_STATUS.get(status, AnalyticsAPIError)


def platform_error_object(body: bytes) -> dict[str, Any] | None:
    """The contract's ``error`` object of an error body (``{"error": {"type": ...}}``), or ``None``.

    ``None`` tells that something other than the platform answered: a proxy's page, an empty body.

    :param body: the answer's body, decoded.
    """
    try:
        document = json.loads(body) if body else None
    except (ValueError, RecursionError):
        return None
    error = document.get("error") if isinstance(document, dict) else None
    return error if isinstance(error, dict) and isinstance(error.get("type"), str) else None


def api_error_from_response(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    method: str,
    path: str,
    retry_after: float | None = None,
    unknown_route: bool = False,
    connection_id: str | None = None,
    body_over_limit: int | None = None,
    workspace_id: str | None = None,
) -> AnalyticsAPIError:
    """Build the typed error for an error response, whatever its body looks like.

    A body that is not the contract's error object (a proxy's HTML page, an empty body) still gives an
    error that names the status and the request id from the headers.

    :param unknown_route: for a 404 or 405, the caller found that the base URL has no /v1 API.
    :param connection_id: the connection to name next to the advice.
    :param body_over_limit: the size limit the body passed, when it was therefore not read (``body`` is empty).
    :param workspace_id: the workspace the request was sent to (``None``: the token's default), named in a 404
        for a missing resource together with the connection.
    """
    request_id = _short_text(headers.get(HEADER_REQUEST_ID))
    error_type = _DEFAULT_TYPE_BY_STATUS.get(status, "internal" if status >= 500 else "unknown")
    details: Mapping[str, Any] = {}
    try:
        document = json.loads(body) if body else None
    except (ValueError, RecursionError):
        document = None
    content_type = headers.get("content-type", "unknown content type")
    message = _describe_unreadable_body(status, content_type, body, body_over_limit, document is not None)
    error = document.get("error") if isinstance(document, dict) else None
    if isinstance(error, dict):
        error_type = _short_text(error.get("type")) or error_type
        message = clean_text(error.get("message")) if error.get("message") else message
        request_id = _short_text(error.get("request_id")) or request_id
        if isinstance(error.get("details"), dict):
            details = scrub_value(error["details"])  # a token behind JSON escapes passed the body's scrub
    elif isinstance(error, str) and error:
        message = clean_text(error)
    kwargs: dict[str, Any] = {
        "status": status,
        "error_type": error_type,
        "request_id": request_id,
        "details": details,
        "method": method,
        "path": path,
        "advice": connection_advice(status, unknown_route=unknown_route),
        "connection_id": connection_id,
        "scope": _missing_resource_scope(workspace_id, connection_id) if status == 404 and not unknown_route else None,
    }
    cls = error_class_for(status)
    if cls is RateLimitedError:
        return RateLimitedError(message, retry_after=retry_after, **kwargs)
    return cls(message, **kwargs)


def _missing_resource_scope(workspace_id: str | None, connection_id: str | None) -> str:
    """Where a missing resource was looked for: a 404 alone does not say that another workspace may have it."""
    if workspace_id:
        workspace = f"workspace {clean_text(workspace_id, 250)!r}"
        return f"{workspace} (connection {clean_text(connection_id, 250)!r})" if connection_id else workspace
    if connection_id:
        return f"the token's default workspace (connection {clean_text(connection_id, 250)!r} sets no workspace_id)"
    return "the token's default workspace"


def _describe_unreadable_body(status: int, content_type: str, body: bytes, over_limit: int | None, parsed: bool) -> str:
    if over_limit is not None:
        return f"HTTP {status} with a body over the {_byte_size(over_limit)} limit (not read)"
    if not body:
        return f"HTTP {status} with an empty body"
    what = "JSON that is not the API's error object" if parsed else "a non-JSON body"
    return f"HTTP {status} with {what} ({clean_text(content_type, 100)}, {len(body)} bytes)"


def _byte_size(count: int) -> str:
    """``3 MiB``, ``64 KiB`` for whole binary units, else ``1500 B``."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} B"
