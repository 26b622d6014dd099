"""Waiting for platform work from a task: one base for operators that wait, on the worker or deferred.

:class:`RemoteWaitOperator` is the single implementation of "poll on the worker or defer, check the event on
resume, give up at the deadline, report a failure" behind the job operators (which also start the work) and
``DownloadReportOperator`` (which waits for a report someone else started). What is fetched, how it is
judged and named comes from the work's description in ``_jobs/<kind>.py``, the one its trigger runs from.
What one try knows is one declared :class:`TaskTry`, made when the try starts. The sensors wait through
Airflow's own poke loop; what they share with the operators and with each other is here too: the resume
(:func:`read_event`, :func:`started_over`) and the poll's log line (:func:`log_poll`).
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NoReturn

from airflow_provider_analytics import operators  # its _runtime: what a task uses once it runs
from airflow_provider_analytics.operators._common import (
    DEFAULT_DEFERRABLE,
    EXECUTION_TIMEOUT_MARGIN,
    AnalyticsBaseOperator,
    handed_links,
    poll_seconds,
    resumed_line,
    seconds,
    task_deadline,
)

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

    from airflow_provider_analytics._jobs.base import RemoteJob
    from airflow_provider_analytics._jobs.events import WaitEvent
    from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger
    from airflow_provider_analytics.wire._outcomes import Outcome
    from airflow_provider_analytics.wire._rate_headers import Pause

# Airflow's own defer timeout is only a backstop for a triggerer that is gone: our trigger fires at the
# deadline itself, this long before Airflow would (the sensors' deferrals pass it on too).
DEFER_BACKSTOP_SECONDS = 300.0
# The status before the first look: unlike any status (None included), so the first state seen is logged.
NOTHING_SEEN = object()
__all__ = ["RemoteWaitOperator", "TaskTry"]


class TaskTry:
    """What one try of a waiting task knows in this process, from its start (``execute``) to its end.

    :param number: the try, as Airflow numbers it (its trigger echoes it back in the event).
    :param deadline: epoch seconds when the wait gives up (``None``: no limit).
    :param running: the work this try started or found; ``on_kill`` cancels it (job operators).
    :param seen: the latest answer read about the work, which the next step reuses instead of reading again.
    :param published: the work whose id and link this try pushed already.
    :param killed: ``on_kill`` ran (from another thread).
    """

    # A plain class, not a dataclass: defining one costs about a millisecond at every parse of a DAG file.
    __slots__ = ("deadline", "killed", "number", "published", "running", "seen")

    def __init__(self, number: int | None, deadline: float | None) -> None:
        self.number = number
        self.deadline = deadline
        self.running: RemoteJob | None = None
        self.seen: tuple[RemoteJob, Mapping[str, Any]] | None = None
        self.published: RemoteJob | None = None
        self.killed = False

    def __repr__(self) -> str:
        return f"TaskTry(number={self.number!r}, deadline={self.deadline!r}, running={self.running!r})"


def started_over(log: Any, event: object, context: Context) -> bool:
    """Whether the task was resumed with an earlier try's event (Airflow 3.0), logged; it should start over.

    :param log: the task's logger.
    :param event: what ``execute_complete`` was called with.
    :param context: the task's context.
    """
    earlier = operators._runtime.from_earlier_try(event, context)
    if earlier is None:
        return False
    log.warning(
        "Airflow resumed try %s with the event of try %s (apache/airflow#56704, Airflow 3.0): starting over",
        operators._runtime.try_number_of(context),
        earlier,
    )
    return True


def read_event(
    log: Any, job: type[RemoteJob], task_id: str, event: object, expected: Mapping[str, Any], deferral: object
) -> tuple[RemoteJob, WaitEvent]:
    """The work a deferred wait resumed with and its checked event, with the task's "resumed" line logged.

    After a success that line is the wait's last word: the caller logs no second line saying the same.

    :param log: the task's logger.
    :param job: the kind of work the task deferred to.
    :param task_id: the task, for the message of an unexpected event.
    :param event: what ``execute_complete`` was called with.
    :param expected: the ids of the work this task waits on, those it knows (checked against the event).
    :param deferral: ``execute_complete``'s ``deferral`` (its ``at``: when the task deferred).
    :raises ~airflow_provider_analytics.operators.errors.UnexpectedEventError: not this wait's event.
    """
    checked = operators._runtime.checked_event(event, job.kind, task_id, expected)
    work = job.from_target(checked["target"])
    log.info("%s", resumed_line(work.describe(), checked, deferral))
    return work, checked


def log_poll(log: Any, work: RemoteJob, resource: Mapping[str, Any], last_status: object, interval: float) -> object:
    """Log a poll (or a poke) that found the work still going; returns the status to pass next time.

    A status change is logged at INFO (the first status seen in this process counts as one), a poll that saw
    none at DEBUG: a wait of hours must not fill the task log with one line per poll.

    :param log: the task's logger.
    :param work: the work waited on.
    :param resource: its state as just read.
    :param last_status: what the previous call returned; :data:`NOTHING_SEEN` before the first.
    :param interval: seconds to the next poll, for the line.
    """
    status = resource.get("status")
    (log.info if status != last_status else log.debug)("%s; next check in %g s", work.state_of(resource), interval)
    return status


class RemoteWaitOperator(AnalyticsBaseOperator):
    """Base of operators that wait for one piece of platform work, on the worker or in the triggerer.

    A concrete operator names the kind of work it waits on (:attr:`job`, a description in ``_jobs/``); a deferred
    wait runs that description's trigger (``TRIGGER_FOR_JOB`` of the runtime seam). This class owns the wait, the
    deadline, the event check on resume and the failure and timeout messages.

    :param deferrable: wait in the triggerer instead of holding a worker slot.
    :param poll_interval: seconds (or a ``timedelta``) between polls.
    :param timeout: seconds (or a ``timedelta``) to wait at most; ``None`` waits without limit (the task's
        ``execution_timeout`` still bounds the wait).
    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    # A class of the runtime seam (operators/_runtime.py), returned when the task runs: parsing a DAG file does
    # not load it (CONTRIBUTING.md, "The DAG-parse path").
    @property
    @abstractmethod
    def job(self) -> type[RemoteJob]:
        """The description of the work waited on (``_jobs/<kind>.py``): it fetches, judges, cancels and names it."""

    def __init__(
        self,
        *,
        deferrable: bool = DEFAULT_DEFERRABLE,
        poll_interval: float | timedelta = 10,
        timeout: float | timedelta | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.deferrable = deferrable
        self.poll_interval = poll_seconds(poll_interval)
        self.timeout = seconds(timeout, "timeout")
        self._try: TaskTry | None = None  # made by begin_try, when a try starts in this process

    @property
    def cancels_on_kill(self) -> bool:
        """Whether killing the task cancels the work (only work this task started itself)."""
        return False

    # The wait -----------------------------------------------------------------------------------------

    def begin_try(self, context: Context) -> TaskTry:
        """Start this try in this process: which try it is (its trigger echoes it) and its deadline.

        The deadline, in epoch seconds, is ``timeout`` from now, or just before ``execution_timeout``.
        """
        self.pushed_links = {}  # a try starts in this process: it has pushed no link yet
        self._try = TaskTry(number=operators._runtime.try_number_of(context), deadline=task_deadline(self, context))
        return self._try

    def wait_for(
        self, work: RemoteJob, resource: Mapping[str, Any], deadline: float | None
    ) -> tuple[Mapping[str, Any], Outcome]:
        """Poll on the worker until the work is over, or defer (resuming in ``execute_complete``).

        Returns the last state read and the verdict on it; that state is the answer, nothing reads it again.

        :param work: the work.
        :param resource: its state as already read (a start's answer counts: it is not read again first).
        :param deadline: the try's (:meth:`begin_try`).
        :raises ~airflow_provider_analytics.operators.errors.RemoteJobTimeout: at the deadline.
        :raises ~airflow_provider_analytics.operators.errors.RemoteWaitError: a poll failed (the client's error is
            its ``__cause__``).
        """
        last_status: object = NOTHING_SEEN
        # Counted in this process's waits in flight while it polls; a deferred wait counts in the triggerer.
        with operators._runtime.waiting(work.kind, counted=not self.deferrable):
            while (result := work.outcome(resource)) is None:
                remaining = None if deadline is None else deadline - time.time()
                if remaining is not None and remaining <= 0:
                    self.give_up(work, resource)
                self._give_up_if_paused_past(work, resource, deadline)
                if self.deferrable:
                    # The trigger waits from here: this process may still be killed while it hands over (a worker
                    # stopped as the task defers), and on_kill must not cancel the work the trigger now watches.
                    if self._try is not None:
                        self._try.running = None
                    self.defer(
                        trigger=self.make_trigger(work, deadline),
                        method_name="execute_complete",
                        timeout=None if remaining is None else timedelta(seconds=remaining + DEFER_BACKSTOP_SECONDS),
                        kwargs={"deferral": self.deferral()},
                    )
                last_status = log_poll(self.log, work, resource, last_status, self.poll_interval)
                time.sleep(self.poll_interval if remaining is None else max(0.0, min(self.poll_interval, remaining)))
                try:
                    # A poll waits out the platform's rate limit (its 429s do not use up the client's retries), but
                    # never past the wait's own deadline: a poll cut short there ends the wait as a timeout.
                    with operators._runtime.call_deadline(
                        None if deadline is None else max(deadline - time.time(), operators._runtime.LAST_LOOK_SECONDS)
                    ):
                        resource = self.read(work.fetch())
                except operators._runtime.AnalyticsError as exc:
                    # Refused for a pause of the token: past the deadline that ends the wait as a timeout; a pause
                    # longer than the client waits in one call (max_retry_after) is waited out poll by poll.
                    if isinstance(exc, operators._runtime.RateLimitedError) and (
                        pause := self._give_up_if_paused_past(work, resource, deadline)
                    ):
                        self.log.info("%s: polling again after it (deferrable=True would free the worker slot)",
                                      pause.describe())  # fmt: skip
                        continue
                    if (
                        deadline is not None
                        and time.time() >= deadline
                        and isinstance(exc, operators._runtime.TRANSIENT_ERRORS)
                    ):
                        self.give_up(work, resource)
                    raise operators._runtime.RemoteWaitError.from_error(work.describe(), exc) from exc
        operators._runtime.work_ended(work.kind, result, work.took(resource))
        return resource, result

    def _give_up_if_paused_past(
        self, work: RemoteJob, resource: Mapping[str, Any], deadline: float | None
    ) -> Pause | None:
        """Give up now when a rate-limit pause of the token lasts past the deadline; else the pause in force, if any.

        No poll could then be answered in time: the slot is not held until the deadline for nothing
        (``_jobs/pauses.py``).
        """
        pause = operators._runtime.pause_now(self.hook.client)
        if pause is not None and deadline is not None and operators._runtime.ends_past(pause, deadline):
            self.give_up(work, resource, operators._runtime.past_deadline(pause, deadline))
        return pause

    def make_trigger(self, work: RemoteJob, deadline: float | None) -> AnalyticsPollTrigger:
        """The trigger that waits for this work: the work's target plus how to poll.

        :param work: the work.
        :param deadline: epoch seconds when the trigger gives up.
        """
        return operators._runtime.TRIGGER_FOR_JOB[type(work)](
            **work.target,
            poll_interval=self.poll_interval,
            deadline=deadline,
            analytics_conn_id=self.analytics_conn_id,
            cancel_on_kill=self.cancels_on_kill,
            try_number=self._try.number if self._try is not None else None,
        )

    def deferral(self) -> dict[str, Any]:
        """What this process hands to the one that resumes the task (``execute_complete``'s ``deferral``).

        ``at``: when it deferred (epoch seconds), for the resume's log line; ``links``: the extra links this try
        pushed, so the resumed process answers ``get_link`` without a read (operators/links.py).
        """
        handed: dict[str, Any] = {"at": time.time()}
        if self.pushed_links is not None:
            handed["links"] = dict(self.pushed_links)
        return handed

    def resume(
        self, event: object, expected: RemoteJob | None, deferral: object = None
    ) -> tuple[RemoteJob, Mapping[str, Any], Outcome]:
        """Read the event a deferred wait resumed with: the work, its last state and the verdict.

        :param event: what ``execute_complete`` was called with.
        :param expected: the work this task waits on, if it knows (checked against the event).
        :param deferral: ``execute_complete``'s ``deferral``, as :meth:`deferral` made it (``None`` from a
            deferral of an earlier release of this provider).
        :raises ~airflow_provider_analytics.operators.errors.RemoteJobTimeout: the trigger reached the deadline.
        :raises ~airflow_provider_analytics.operators.errors.RemoteWaitError: the trigger ended on a permanent API
            error.
        """
        self.pushed_links = handed_links(deferral)
        expected_target = expected.target if expected is not None else {}
        work, checked = read_event(self.log, self.job, self.task_id, event, expected_target, deferral)
        resource = checked["resource"]
        if checked["status"] == "timeout":
            self.give_up(work, resource or {})
        if checked["status"] == "error" or resource is None:  # a success or failure event always has it
            raise operators._runtime.RemoteWaitError.from_event(checked["message"], checked.get("api_error"))
        return work, resource, "success" if checked["status"] == "success" else "failure"

    def failed(self, work: RemoteJob, resource: Mapping[str, Any]) -> NoReturn:
        """Fail the task for work that ended in failure, with the platform's error.

        :param work: the work.
        :param resource: its last state.
        """
        raise operators._runtime.RemoteJobFailed(operators._runtime.failure_message(work.state_of(resource), resource))

    def give_up(self, work: RemoteJob, resource: Mapping[str, Any], early: str | None = None) -> NoReturn:
        """Fail the task when the wait outlasted its deadline, or will (``early``: why, before it).

        :param work: the work.
        :param resource: its last state.
        :param early: why the wait ends before its deadline (a rate-limit pause that lasts past it).
        """
        raise operators._runtime.RemoteJobTimeout(self.timeout_message(work, resource, early=early))

    def timeout_message(
        self, work: RemoteJob, resource: Mapping[str, Any], cancelled: bool | None = None, early: str | None = None
    ) -> str:
        """How a task that gave up names the work, its last state, the limit it reached and what to change.

        :param work: the work.
        :param resource: its last state.
        :param cancelled: whether the work was cancelled (``None``: this kind of wait cancels nothing).
        :param early: why the wait ended before its limit, if it did.
        """
        limit, change = self._wait_limit()
        ended, because = (f"after {limit}", "") if early is None else (f"before {limit} ran out", f": {early}")
        outcome = "" if cancelled is None else ("; it was cancelled" if cancelled else "; it was NOT cancelled")
        return (
            f"gave up waiting for {work.describe()} {ended} (last status: {resource.get('status', 'unknown')})"
            f"{because}{outcome}. To wait longer, {change}"
        )

    def _wait_limit(self) -> tuple[str, str]:
        """The limit that ended the wait, in seconds, and the setting that lengthens it."""
        # Deferred, a long wait costs no worker slot; on the worker it holds one all along.
        slot = "" if self.deferrable else " (with deferrable=True a long wait holds no worker slot)"
        execution = self.execution_timeout.total_seconds() if self.execution_timeout is not None else None
        # begin_wait's deadline is the earlier of the two; the wait starts moments after the task does.
        margin = None if execution is None else execution - min(EXECUTION_TIMEOUT_MARGIN, execution / 10)
        if self.timeout is not None and (margin is None or self.timeout <= margin):
            return f"timeout={self.timeout:g} s", f"raise `timeout`{slot}"
        if execution is not None and margin is not None:
            return (
                f"{margin:g} s, just before the task's execution_timeout of {execution:g} s",
                f"raise the task's `execution_timeout`{slot}",
            )
        return "its deadline", f"raise `timeout`{slot}"
