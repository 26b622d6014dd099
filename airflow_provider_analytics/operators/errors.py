"""Why a task that waits for platform work failed: one class for each reason, so callers decide by type.

- :class:`RemoteJobFailed`: the platform says the work ended in failure (failed, cancelled, expired).
- :class:`RemoteJobTimeout`: the wait outlasted ``timeout`` (or the task's ``execution_timeout``).
- :class:`RemoteWaitError`: an API error ended the wait while it polled; the work's own fate is unknown.
- :class:`RequestChangedBetweenTries`: a retry's start was refused because its request is not the one an
  earlier try sent under the same ``Idempotency-Key``.
- :class:`UnexpectedEventError`: a task was resumed with something that is not the event of its wait.
- :class:`DefinitionsDrifted`: a drift check (``plan_only`` with ``fail_on_changes``) found changes to make.
- :class:`ReviewedPlanMoved`: planning again before an apply gave other changes than the reviewed plan.

Each is an ``AirflowException``, so Airflow retries the task as for any other failure, unless a retry cannot
change the answer: :func:`why_final` says when, and the operators then raise :class:`FinalFailure` (an
``AirflowFailException``: the task fails without using its retries) in its place. A task imports this module
when it runs, not at DAG parse time. :class:`UnexpectedEventError` is the event contract's own error
(``_jobs/events.py``, below the operators and the triggers), exported from here with the other task failures.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException

from airflow_provider_analytics._jobs.events import UnexpectedEventError
from airflow_provider_analytics.wire.errors import AnalyticsAPIError, AnalyticsInputError, api_error_fields

if TYPE_CHECKING:
    from airflow_provider_analytics.wire.errors import AnalyticsError, ConflictError

__all__ = [
    "DefinitionsDrifted",
    "FinalFailure",
    "RemoteJobFailed",
    "RemoteJobTimeout",
    "RemoteWaitError",
    "RequestChangedBetweenTries",
    "ReviewedPlanMoved",
    "UnexpectedEventError",
    "why_final",
]

# Refusals a retry gets again: a malformed request (400, 422), a target that does not exist (404) or no longer
# does (410), a failed precondition (412), a body too large (413). A 409 is left out: it also means "not ready
# yet" and "already finished"; the one 409 that is final, a reused Idempotency-Key, has its own class.
# 401/403 are left out too: the connection may be fixed before the retry, which reads it again.
FINAL_STATUSES = frozenset({400, 404, 410, 412, 413, 422})


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


class DefinitionsDrifted(AirflowFailException):
    """A drift check failed: the platform and the definitions differ, so applying would change something.

    Raised by ``ApplyDefinitionsOperator(plan_only=True, fail_on_changes=True)`` after logging the plan's table;
    the plan is in XCom under the key ``plan``. The task fails without using its retries: a retry would find the
    same until someone applies the definitions or changes them.

    :param message: what differs.
    :param plan: the plan's dict, as pushed to XCom.
    """

    def __init__(self, message: str, *, plan: Mapping[str, Any]) -> None:
        super().__init__(message)
        self.plan = plan


class ReviewedPlanMoved(AirflowFailException):
    """The apply's plan is not the reviewed one: something changed after the review, and nothing was written.

    Raised by ``ApplyDefinitionsOperator(reviewed_plan=...)``; the message lists each object that moved. The task
    fails without using its retries: the new plan needs a review of its own.

    :param message: what moved.
    :param moved: one line per object.
    """

    def __init__(self, message: str, *, moved: list[str]) -> None:
        super().__init__(message)
        self.moved = moved


class FinalFailure(AirflowFailException):
    """The task failed for a reason a retry cannot change, so it fails without using its retries.

    The message is the error's, then, on a line of its own, why no retry was made. The error itself is
    :attr:`error`, for ``on_failure_callback`` code that decides by type or status. It is not chained as the
    ``__cause__`` (:meth:`because` is raised ``from None``): Airflow's task log shows every exception of a chain
    with its message and frames, so the error's text would show twice, and its frames (the provider's own
    checks) add nothing to a message that already says what to change.

    :param message: the message.
    :param error: the error that failed the task.
    """

    def __init__(self, message: str, *, error: BaseException) -> None:
        super().__init__(message)
        self.error = error

    @classmethod
    def because(cls, error: BaseException, reason: str) -> FinalFailure:
        """The failure to raise (``from None``) in place of ``error``, which a retry cannot change.

        :param error: what the task raised.
        :param reason: why a retry cannot change it (:func:`why_final`).
        """
        return cls(f"{error}\n(not retried: {reason})", error=error)


def why_final(error: BaseException, *, failed_work_is_final: bool = False) -> str | None:
    """Why a retry of the task cannot change ``error``: a sentence, or ``None`` when a retry can (Airflow retries).

    :param error: what the task raised.
    :param failed_work_is_final: the task waits for work it did not start (a download of a report), so work
        that ended in failure stays failed for every retry.
    """
    if isinstance(error, FinalFailure):
        return None
    if isinstance(error, AnalyticsInputError):
        return "the task's input is invalid, and a retry would send the same"
    if isinstance(error, RequestChangedBetweenTries):
        return "the request changed between tries, and every retry would send the changed one"
    status = error.status if isinstance(error, (AnalyticsAPIError, RemoteWaitError)) else None
    # A 404 that carries advice means "no API at this base URL": a connection setting, which may be fixed.
    if status in FINAL_STATUSES and not (isinstance(error, AnalyticsAPIError) and error.advice):
        return f"the platform refused the request ({status}), and a retry would get the same answer"
    if failed_work_is_final and isinstance(error, RemoteJobFailed):
        return "the work ended in failure and this task does not start it again, so a retry would find the same"
    from airflow_provider_analytics.destinations._target import no_credentials  # on failure only: cheap imports

    if no_credentials(error):
        return "the destination's object store found no credentials to use, and a retry would find none"
    return None
