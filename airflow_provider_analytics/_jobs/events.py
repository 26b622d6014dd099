"""The one contract between a waiting trigger and the task it resumes: the event's shape and its check.

Every poll trigger builds its event with :func:`wait_event`; every task that deferred to one (the job
operators, the download operator, the sensor) reads it back only through :func:`checked_event`, and
reports failed work with :func:`failure_message`. It sits beside the descriptions of the work
(``_jobs/<kind>.py``), below both the operators and the triggers, and imports neither: the error its check
raises, :class:`UnexpectedEventError`, is defined here and re-exported by ``operators/errors.py`` (its public
home), so the triggerer never loads an operators module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict, cast

from airflow.providers.common.compat.sdk import AirflowException

from airflow_provider_analytics._jobs.base import JobKind
from airflow_provider_analytics.wire.errors import ApiErrorFields, clean_text

# success/failure: the platform says the work is over; timeout: the deadline passed (resource is the last
# state seen); error: a permanent API error (401, 404, a malformed answer) ended the wait.
EventStatus = Literal["success", "failure", "timeout", "error"]
EVENT_STATUSES: frozenset[str] = frozenset({"success", "failure", "timeout", "error"})

__all__ = [
    "EVENT_STATUSES",
    "EventStatus",
    "WaitEvent",
    "checked_event",
    "failure_message",
    "from_earlier_try",
    "try_number_of",
    "wait_event",
]


class UnexpectedEventError(AirflowException):
    """A task was resumed with something that is not the event of the wait it deferred to."""


# The contract owns the error its check raises; users catch it from its one public home, with the other task
# failures (operators/errors.py re-exports it), and that is the name tracebacks and pickles give it too.
UnexpectedEventError.__module__ = "airflow_provider_analytics.operators.errors"


class WaitEvent(TypedDict):
    """What a poll trigger fires with.

    :param status: one of :data:`EVENT_STATUSES`.
    :param kind: what was waited on: ``execution``, ``report`` or ``sync``.
    :param target: the ids (and settings) of the wait, as the trigger's kwargs name them.
    :param resource: the platform object as last fetched, or ``None`` if no poll succeeded.
    :param message: one line for the task log.
    :param try_number: the task try that deferred to the trigger, when the task told it (see
        :func:`from_earlier_try`).
    :param api_error: in an ``error`` event, the error that ended the wait (absent from the events of earlier
        releases of this provider).
    """

    status: EventStatus
    kind: JobKind
    target: dict[str, Any]
    resource: dict[str, Any] | None
    message: str
    try_number: NotRequired[int]
    api_error: NotRequired[ApiErrorFields]


def wait_event(
    status: EventStatus,
    kind: JobKind,
    target: Mapping[str, Any],
    resource: Mapping[str, Any] | None,
    message: str,
    try_number: int | None = None,
    api_error: ApiErrorFields | None = None,
) -> WaitEvent:
    """Build the payload of a trigger event (JSON values only, so it survives the trip through the database).

    :param status: the event's status.
    :param kind: what was waited on.
    :param target: the wait's ids.
    :param resource: the last state fetched, if any.
    :param message: one line for the task log.
    :param try_number: the task try that deferred, if the trigger was told.
    :param api_error: for an ``error`` event, the fields of the error that ended the wait
        (``wire.errors.api_error_fields``).
    """
    event: WaitEvent = {
        "status": status,
        "kind": kind,
        "target": dict(target),
        "resource": dict(resource) if resource is not None else None,
        "message": message,
    }
    if try_number is not None:
        event["try_number"] = try_number
    if api_error is not None:
        event["api_error"] = api_error
    return event


def try_number_of(context: Mapping[str, Any]) -> int | None:
    """The running try of the task, as Airflow numbers it, when the context says.

    :param context: the task's context.
    """
    number = getattr(context.get("ti"), "try_number", None)
    return number if isinstance(number, int) and not isinstance(number, bool) else None


def from_earlier_try(event: object, context: Mapping[str, Any]) -> int | None:
    """The try an event belongs to, when that is an earlier try than the one resumed with it; else ``None``.

    Airflow 3.0 does not clear a deferred task's resume point when the task is retried (apache/airflow#56704,
    fixed in 3.1): the next try skips ``execute`` and resumes with the previous try's event, so a failed
    wait would fail every retry the same way. A task that finds such an event starts over instead.

    :param event: what the task was resumed with.
    :param context: the task's context.
    """
    current = try_number_of(context)
    deferred = event.get("try_number") if isinstance(event, Mapping) else None
    if current is None or not isinstance(deferred, int) or isinstance(deferred, bool) or deferred >= current:
        return None
    return deferred


def checked_event(event: object, kind: JobKind, task_id: str, target: Mapping[str, Any]) -> WaitEvent:
    """The event a task resumed with, once it is known to be a well-formed event of this very wait.

    :param event: what the task was resumed with (anything: it came through the database).
    :param kind: the kind of wait the task deferred to.
    :param task_id: the task, for the message.
    :param target: the ids the task waits on; each must equal the event's (a ``None`` value is not compared,
        for an id the task does not know itself).
    :raises UnexpectedEventError: for anything else, naming what is wrong.
    """
    if not isinstance(event, Mapping):
        raise UnexpectedEventError(f"{task_id}: unexpected trigger event {event!r} (not a mapping)")
    problem = None
    if event.get("status") not in EVENT_STATUSES:
        problem = f"status must be one of {sorted(EVENT_STATUSES)}"
    elif event.get("kind") != kind:
        problem = f"this task waits on a {kind}"
    elif not isinstance(event.get("target"), Mapping):
        problem = "it names no target"
    elif event.get("resource") is not None and not isinstance(event.get("resource"), Mapping):
        problem = "its resource is not an object"
    elif event["status"] in ("success", "failure") and event.get("resource") is None:
        problem = f"a {event['status']} event names the work's last state"
    elif event.get("api_error") is not None and not isinstance(event.get("api_error"), Mapping):
        problem = "its api_error is not an object"
    else:
        expected = {key: value for key, value in target.items() if value is not None}
        if any(event["target"].get(key) != value for key, value in expected.items()):
            problem = f"it is for another {kind}; this task waits on {expected}"
    if problem is not None:
        raise UnexpectedEventError(f"{task_id}: unexpected trigger event {event!r}: {problem}")
    return cast(WaitEvent, dict(event))


def failure_message(state: str, resource: Mapping[str, Any]) -> str:
    """How a task reports remote work that ended in failure, with the platform's own error.

    :param state: the work and how it ended, as its wait phrases it (``Wait.state_of``): ``report r1 failed``,
        ``execution e1 of workflow w1 was cancelled``.
    :param resource: the work's last state.
    """
    error = resource.get("error")
    error = error if isinstance(error, Mapping) else {}
    # Folded and capped here too: an event stored by an earlier release carries the platform's text as it came.
    error_type = clean_text(error.get("type", "unknown_error"), 200)
    return f"{state}: {error_type}: {clean_text(error.get('message', 'the platform gave no message'))}"
