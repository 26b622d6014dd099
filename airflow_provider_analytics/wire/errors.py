"""The one exception tree of the provider; ``_error_answers.py`` is the one place that maps HTTP answers onto it.

Callers decide by type (or by ``status``/``error_type``), never by reading a message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, TypedDict

from airflow_provider_analytics.wire._redaction import scrub_text

# The exceptions, and the errors a retry may cure; the ADVICE_* texts are for the provider's own messages.
# fmt: off
__all__ = [
    "TRANSIENT_ERRORS", "AnalyticsAPIError", "AnalyticsConnectionError", "AnalyticsError", "AnalyticsInputError",
    "AnalyticsTLSError", "AnalyticsTimeoutError", "AnalyticsTransportError", "AnswerMismatchError", "ConflictError",
    "DownloadIntegrityError", "ForbiddenError", "GoneError", "InvalidRequestError", "NotFoundError",
    "PayloadTooLargeError", "PreconditionFailedError", "RateLimitedError", "ResponseTooLargeError", "ServerError",
    "UnauthenticatedError", "UnexpectedResponseError",
]
# fmt: on


class AnalyticsError(Exception):
    """Root of every error this provider raises."""


class AnalyticsInputError(AnalyticsError, ValueError):
    """Bad input, refused before any request was sent. The message says what to change."""


class UnexpectedResponseError(AnalyticsError):
    """The platform answered with something the contract does not allow: a body of the wrong shape, a
    status no request expects (a redirect, a ``204`` where a body is due), a body that does not decode.

    :param message: what was wrong, naming the request.
    :param request_id: the ``X-Request-Id`` of the answer, when it had one.
    :param content_type: the answer's ``Content-Type``, when its body was read: an HTML page says that something
        other than the platform answered (Airflow's own web server, a proxy's page).
    """

    def __init__(self, message: str, *, request_id: str | None = None, content_type: str | None = None) -> None:
        self.request_id = request_id
        self.content_type = content_type
        if request_id and request_id not in message:
            message = f"{message} (request id {request_id})"
        super().__init__(message)


class AnswerMismatchError(UnexpectedResponseError):
    """A successful answer about another object than the one asked for: the execution, report or data source it
    names by ``id``, ``workflow_id`` or ``data_source_id`` is not the one in the request. The message says what
    was asked and what came back; the answer is never taken as the state of the work asked about.

    A wait does not poll past it (it is not in :data:`TRANSIENT_ERRORS`): a platform that answers for another
    object is broken, and a later answer that names the right ids would not make the earlier one true. A task's
    own retries still apply, as for any malformed answer (docs/api-contract.md).
    """


class ResponseTooLargeError(UnexpectedResponseError):
    """An answer's body was larger than the client accepts; it was not read further."""


class DownloadIntegrityError(AnalyticsError):
    """A downloaded body was shorter than announced or did not match its digest; nothing was kept."""


# What to change for failures a connection's settings cause: test_connection() and AnalyticsAPIError.advice.
ADVICE_TOKEN_REJECTED = "The API token was rejected (401): check the connection's API token."
ADVICE_WORKSPACE_FORBIDDEN = "The token may not use this workspace (403): check workspace_id or the token's grants."
ADVICE_NO_API = "No /v1 API at this base URL: check the host and its path prefix."


def connection_advice(status: int, *, unknown_route: bool = False) -> str | None:
    """The sentence that says which connection setting to change for an error status, if one does.

    :param status: the HTTP status.
    :param unknown_route: for a 404 or 405, whether the base URL has no /v1 API (rather than a missing resource).
    """
    if status == 401:
        return ADVICE_TOKEN_REJECTED
    if status == 403:
        return ADVICE_WORKSPACE_FORBIDDEN
    if status in (404, 405) and unknown_route:
        return ADVICE_NO_API
    return None


class AnalyticsAPIError(AnalyticsError):
    """The platform answered with an error status.

    ``str()`` is :attr:`summary` (status, type, request, for a missing resource where it was looked for, message,
    request id) followed, for a rejected token, a refused workspace or a base URL without the API, by
    :attr:`advice` naming the connection. ``details`` that only repeat the message, and the message's leading
    restatement of the type (``invalid request: ...``), are left out of ``str()``, not out of the attributes.

    :param message: the platform's message (or a description of the unreadable body).
    :param status: the HTTP status code.
    :param error_type: the contract's error ``type`` (``not_found``, ``conflict``, ...).
    :param request_id: the ``X-Request-Id`` of the failed request, when the platform sent one.
    :param details: the error's ``details`` object (for 400/422 it names the bad fields).
    :param method: the request's method, for the message.
    :param path: the request's path, for the message.
    :param advice: what to change in the connection (one of the ``ADVICE_*`` sentences), when a setting is the cause.
    :param connection_id: the connection the client was built from, named next to the advice.
    :param scope: where a missing resource was looked for, said after the request (``workspace 'ws_1'``).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        error_type: str,
        request_id: str | None = None,
        details: Mapping[str, Any] | None = None,
        method: str | None = None,
        path: str | None = None,
        advice: str | None = None,
        connection_id: str | None = None,
        scope: str | None = None,
    ) -> None:
        self.message = message
        self.status = status
        self.error_type = error_type
        self.request_id = request_id
        self.details = dict(details or {})
        self.method = method
        self.path = path
        self.advice = advice
        self.connection_id = connection_id
        self.scope = scope
        self.summary = self._describe()
        self._text = self.summary + self._advice_text()
        super().__init__(self._text)

    def _advice_text(self) -> str:
        if not self.advice:
            return ""
        if not self.connection_id:
            return f". {self.advice}"
        return f". {self.advice.rstrip('.')} (connection {clean_text(self.connection_id, 250)!r})."

    def _describe(self) -> str:
        where = f" on {self.method} {self.path}" if self.method and self.path else ""
        where += f" in {self.scope}" if self.scope else ""
        rid = f" (request id {self.request_id})" if self.request_id else ""
        detail = ""
        if self.details and not _said_in(clean_text(self.message).casefold(), self.details):
            try:
                detail = "; details: " + clean_text(json.dumps(self.details, sort_keys=True, default=str))
            except (ValueError, TypeError, RecursionError):
                detail = "; details: (unreadable)"
        return f"{self.status} {self.error_type}{where}: {_without_type(self.message, self.error_type)}{detail}{rid}"

    def __str__(self) -> str:
        return self._text


def _without_type(message: str, error_type: str) -> str:
    """``message`` without a leading restatement of ``error_type`` (``invalid request: ...``), said just before."""
    restated = f"{error_type.replace('_', ' ')}:"
    rest = message[len(restated) :].strip() if message.casefold().startswith(restated.casefold()) else ""
    return rest or message


def _said_in(message: str, details: object) -> bool:
    """Whether ``details`` only repeat ``message`` (casefolded): each text or number in them appears there, and
    so does each field name that maps to one. The keys of a record in a list (``[{"field": ..., "message": ...}]``)
    are its schema, not fields, so they need not. Details of over 200 parts are not compared, only shown.
    """
    pending: list[tuple[str | None, object, bool]] = [(None, details, False)]  # (its field name, part, in a list)
    for _ in range(_MOST_DETAIL_PARTS):
        if not pending:
            return True
        field, part, in_list = pending.pop()
        if isinstance(part, (Mapping, list)) and len(part) > _MOST_DETAIL_PARTS:
            return False
        if isinstance(part, Mapping):
            pending.extend((None if in_list else str(key), value, False) for key, value in part.items())
        elif isinstance(part, list):
            pending.extend((None, item, True) for item in part)
        elif any(text not in (None, "") and clean_text(text).casefold() not in message for text in (field, part)):
            return False
    return not pending


class InvalidRequestError(AnalyticsAPIError):
    """400 or 422: the platform rejected the request's content; ``details`` names the fields."""


class UnauthenticatedError(AnalyticsAPIError):
    """401: the API token is missing, malformed, expired or revoked."""


class ForbiddenError(AnalyticsAPIError):
    """403: the token is valid but may not do this (or may not use the workspace)."""


class NotFoundError(AnalyticsAPIError):
    """404: no such resource in the workspace."""


class ConflictError(AnalyticsAPIError):
    """409: the resource is in the wrong state, or an idempotency key was reused with another body."""


class GoneError(AnalyticsAPIError):
    """410: the resource existed but is gone for good (an expired report)."""


class PreconditionFailedError(AnalyticsAPIError):
    """412: ``If-Match`` did not match the resource's current version."""


class PayloadTooLargeError(AnalyticsAPIError):
    """413: the request body is over the platform's limit."""


class RateLimitedError(AnalyticsAPIError):
    """429 that the client did not wait out: ``Retry-After`` asked for a longer wait than the policy honours, the
    request was refused for longer than ``max_rate_limited_seconds``, or its turn would come after its deadline.

    :param retry_after: seconds the platform asked to wait, when it said.
    """

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        self.retry_after = retry_after
        super().__init__(message, **kwargs)


class ServerError(AnalyticsAPIError):
    """5xx after the retries were used up."""


class AnalyticsTransportError(AnalyticsError):
    """No HTTP answer: the connection failed or timed out.

    :param message: what happened, naming the method and path.
    :param method: the request's method.
    :param path: the request's path.
    """

    def __init__(self, message: str, *, method: str | None = None, path: str | None = None) -> None:
        self.method = method
        self.path = path
        super().__init__(message)


class AnalyticsConnectionError(AnalyticsTransportError):
    """The platform could not be reached, or dropped the connection."""


class AnalyticsTLSError(AnalyticsConnectionError):
    """The TLS handshake failed (certificate not trusted, wrong host name, ...)."""


class AnalyticsTimeoutError(AnalyticsTransportError):
    """The request did not complete within the configured timeout."""


# What a wait meets when the platform is down, slow or busy, still failing after the client's own retries:
# the wait polls again later rather than give up over something the platform will recover from.
TRANSIENT_ERRORS = (ServerError, RateLimitedError, AnalyticsTransportError)

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")
MAX_TEXT = 1000
_MOST_DETAIL_PARTS = 200  # a hostile body's huge details are shown cut short rather than compared part by part


def clean_text(value: object, limit: int = MAX_TEXT) -> str:
    """Platform text made safe for one log line: tokens masked (wire/_redaction.py), control characters folded,
    at most ``limit`` characters.

    :param value: what the platform sent (any JSON value).
    :param limit: the most characters kept.
    """
    text = scrub_text(_CONTROL.sub(" ", value if isinstance(value, str) else str(value)))
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


class ApiErrorFields(TypedDict):
    """What a wait's ``error`` event says of the client error that ended it (each ``None`` when not known).

    Kept here, with the errors it is read from, so that the event contract (``_jobs/events.py``) and the task
    failures (``operators/errors.py``) both read it from below them.

    :param status: the HTTP status (``None`` when no answer came: a connection failure).
    :param error_type: the platform's error ``type``.
    :param request_id: the failed request's ``X-Request-Id``.
    """

    status: int | None
    error_type: str | None
    request_id: str | None


def api_error_fields(error: AnalyticsError) -> ApiErrorFields:
    """The status, error type and request id of a client error, as JSON values an event can carry.

    :param error: the error a poll raised.
    """
    if isinstance(error, AnalyticsAPIError):
        return {"status": error.status, "error_type": error.error_type, "request_id": error.request_id}
    request_id = getattr(error, "request_id", None)  # an unexpected answer has one; a failed connection none
    return {"status": None, "error_type": None, "request_id": request_id if isinstance(request_id, str) else None}
