"""Why a task that waits for platform work failed: one class for each reason, so callers decide by type.

- :class:`RemoteJobFailed`: the platform says the work ended in failure (failed, cancelled, expired).
- :class:`RemoteJobTimeout`: the wait outlasted ``timeout`` (or the task's ``execution_timeout``).
- :class:`RemoteWaitError`: an API error ended the wait while it polled; the work's own fate is unknown.
- :class:`RequestChangedBetweenTries`: a retry's start was refused because its request is not the one an
  earlier try sent under the same ``Idempotency-Key``.

Each is an ``AirflowException``, so Airflow retries the task as for any other failure. The operators and the
sensor import this module at DAG parse time; it imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.providers.common.compat.sdk import AirflowException

from airflow_provider_analytics.triggers.wait_events import api_error_fields
from airflow_provider_analytics.wire.errors import AnalyticsError, ConflictError

__all__ = ["RemoteJobFailed", "RemoteJobTimeout", "RemoteWaitError", "RequestChangedBetweenTries"]


class RemoteJobFailed(AirflowException):
    """The platform reports that the work ended in failure; the message has its error type and message."""


class RemoteJobTimeout(AirflowException):
    """The wait outlasted ``timeout`` (or the task's ``execution_timeout``); says whether the work was cancelled."""


class RemoteWaitError(AirflowException):
    """An API error ended the wait while it polled the work: whether the work itself failed is not known.

    In the triggerer only a permanent error ends a wait (a 401 that a re-read connection did not cure, a 404, a
    malformed answer): it polls again after an outage. On the worker, an error that the client's own retries
    did not outlast ends it too; the client's exception is then the ``__cause__``.

    :param message: what was waited for and what went wrong.
    :param status: the HTTP status of the failed poll; ``None`` when there was no answer or it is not known.
    :param error_type: the platform's error ``type`` (``unauthenticated``, ``not_found``, ...), when it said.
    :param request_id: the ``X-Request-Id`` of the failed poll, when the platform sent one.
    """

    def __init__(
        self, message: str, *, status: int | None = None, error_type: str | None = None, request_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.request_id = request_id

    @classmethod
    def from_error(cls, what: str, error: AnalyticsError) -> RemoteWaitError:
        """The wait for ``what`` ended on the client's ``error`` (raise it ``from`` that error).

        :param what: how the work is named (``execution e1 of workflow w1``).
        :param error: the error a poll raised.
        """
        return cls(f"polling {what} failed: {error}", **api_error_fields(error))

    @classmethod
    def from_event(cls, message: str, fields: Mapping[str, Any] | None) -> RemoteWaitError:
        """The wait ended on the error a trigger reported in its event.

        :param message: the event's message (it names the work, as :meth:`from_error`'s does).
        :param fields: the event's ``api_error``; ``None`` from a trigger that did not
            send one. Values of the wrong type are dropped: the event came through the database.
        """
        fields = fields or {}
        status, error_type, request_id = (fields.get(key) for key in ("status", "error_type", "request_id"))
        return cls(
            message,
            status=status if isinstance(status, int) and not isinstance(status, bool) else None,
            error_type=error_type if isinstance(error_type, str) else None,
            request_id=request_id if isinstance(request_id, str) else None,
        )


class RequestChangedBetweenTries(AirflowException):
    """A retry's start was refused (409): its ``Idempotency-Key`` was used by an earlier try with another request.

    A retry repeats the earlier try's key so that it finds that try's work instead of starting it again; the
    platform keeps the first request of a key and refuses a repeat with a different body. The request (its
    inputs, parameters) therefore rendered differently on this try. The platform's ``ConflictError`` is the
    ``__cause__``.

    :param message: what was refused and what to change.
    :param idempotency_key: the key both tries used.
    :param conflict: the platform's refusal.
    """

    def __init__(self, message: str, *, idempotency_key: str, conflict: ConflictError) -> None:
        super().__init__(message)
        self.idempotency_key = idempotency_key
        self.request_id = conflict.request_id
