"""Waiting for platform work from a task: one poll-or-defer loop, and one base for operators that wait.

:class:`RemoteWaitOperator` is the single implementation of "poll on the worker or defer, check the event on
resume, give up at the deadline, report a failure" behind the job operators (which also start the work) and
``DownloadReportOperator`` (which waits for a report someone else started).
"""

from __future__ import annotations

import importlib
import time
from abc import abstractmethod
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

from airflow.providers.common.compat.sdk import AirflowException, Context, conf

from airflow_provider_analytics.operators.common import AnalyticsBaseOperator, poll_seconds, seconds
from airflow_provider_analytics.triggers.wait_events import (
    Outcome,
    WaitKind,
    checked_event,
    describe_target,
    failure_message,
    from_earlier_try,
    try_number_of,
)

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import BaseOperator

    from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger

# Airflow's own defer timeout is only a backstop for a triggerer that is gone: our trigger fires at the
# deadline itself, this long before Airflow would.
DEFER_BACKSTOP_SECONDS = 300.0
# Stop waiting this long before the task's execution_timeout (a tenth of it, at most 15 s), so our own
# deadline fires first and ends the wait cleanly instead of Airflow killing the task.
EXECUTION_TIMEOUT_MARGIN = 15.0


class RemoteJobFailed(AirflowException):
    """The remote work ended in failure (its error type and message are in the text)."""


class RemoteJobTimeout(AirflowException):
    """The wait outlasted ``timeout`` (or the task's ``execution_timeout``)."""


def wait_until_done(
    operator: BaseOperator,
    resource: Mapping[str, Any],
    *,
    fetch: Callable[[], Mapping[str, Any]],
    outcome: Callable[[Mapping[str, Any]], Outcome | None],
    deadline: float | None,
    poll_interval: float,
    describe: str,
    give_up: Callable[[Mapping[str, Any]], NoReturn],
    trigger: Callable[[], AnalyticsPollTrigger] | None = None,
) -> tuple[Mapping[str, Any], Outcome]:
    """Poll until ``outcome`` decides, or defer to ``trigger()`` (resuming in ``execute_complete``).

    :param operator: the waiting task (for ``defer`` and its log).
    :param resource: the state already fetched.
    :param fetch: fetches the current state.
    :param outcome: ``success``/``failure`` when the wait is over, else ``None``.
    :param deadline: epoch seconds after which ``give_up`` is called; ``None`` waits without limit.
    :param poll_interval: seconds between polls on the worker.
    :param describe: how the log names what is waited for.
    :param give_up: raises when the deadline has passed, given the last state seen.
    :param trigger: builds the trigger to defer to; ``None`` polls on the worker.
    """
    while (result := outcome(resource)) is None:
        remaining = None if deadline is None else deadline - time.time()
        if remaining is not None and remaining <= 0:
            give_up(resource)
        if trigger is not None:
            operator.defer(
                trigger=trigger(),
                method_name="execute_complete",
                timeout=None if remaining is None else timedelta(seconds=remaining + DEFER_BACKSTOP_SECONDS),
            )
        operator.log.info("%s is %s; next check in %g s", describe, resource.get("status"), poll_interval)
        time.sleep(poll_interval if remaining is None else max(0.0, min(poll_interval, remaining)))
        resource = fetch()
    return resource, result


class RemoteWaitOperator(AnalyticsBaseOperator):
    """Base of operators that wait for one piece of platform work, on the worker or in the triggerer.

    A concrete operator says how to fetch the work, when it is over, and how a trigger names it; this class
    owns the wait, the deadline, the event check on resume and the failure and timeout messages.

    :param deferrable: wait in the triggerer instead of holding a worker slot.
    :param poll_interval: seconds (or a ``timedelta``) between polls.
    :param timeout: seconds (or a ``timedelta``) to wait at most; ``None`` waits without limit (the task's
        ``execution_timeout`` still bounds the wait).
    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    kind: ClassVar[WaitKind]
    noun: ClassVar[str]
    # Imported only when the task defers, so DAG files do not pay for the trigger machinery.
    trigger_class_path: ClassVar[str]

    def __init__(
        self,
        *,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        poll_interval: float | timedelta = 10,
        timeout: float | timedelta | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.deferrable = deferrable
        self.poll_interval = poll_seconds(poll_interval)
        self.timeout = seconds(timeout, "timeout")
        self.waiting_try: int | None = None  # set by begin_wait

    # What a concrete operator says --------------------------------------------------------------------

    @abstractmethod
    def fetch(self, external_id: Any) -> Mapping[str, Any]:
        """The work's current state."""

    @abstractmethod
    def outcome(self, resource: Mapping[str, Any]) -> Outcome | None:
        """``success``/``failure`` when the work is over, else ``None``."""

    @abstractmethod
    def trigger_target(self, external_id: Any) -> dict[str, Any]:
        """The trigger kwargs that name the work (the event's ``target``)."""

    @abstractmethod
    def external_id_of_target(self, target: Mapping[str, Any]) -> Any:
        """The external id an event's ``target`` names (the inverse of :meth:`trigger_target`)."""

    def describe(self, external_id: Any) -> str:
        """How logs and errors name the work: the same words its trigger uses."""
        return describe_target(self.kind, self.trigger_target(external_id))

    @property
    def cancels_on_kill(self) -> bool:
        """Whether killing the task cancels the work (only work this task started itself)."""
        return False

    # The wait -----------------------------------------------------------------------------------------

    def begin_wait(self, context: Context) -> float | None:
        """Start this try's wait: note which try waits (its trigger echoes it), and return the deadline.

        The deadline, in epoch seconds, is ``timeout`` from now, or just before ``execution_timeout``.
        """
        self.waiting_try = try_number_of(context)
        deadlines = []
        if self.timeout is not None:
            deadlines.append(time.time() + self.timeout)
        start = getattr(context.get("ti"), "start_date", None)
        if self.execution_timeout is not None:
            # Airflow 2.11's dag.test() runs tasks without a start_date: count from now, moments after it.
            started = start.timestamp() if start is not None else time.time()
            limit = self.execution_timeout.total_seconds()
            deadlines.append(started + limit - min(EXECUTION_TIMEOUT_MARGIN, limit / 10))
        return min(deadlines) if deadlines else None

    def wait_for(
        self, external_id: Any, resource: Mapping[str, Any], deadline: float | None
    ) -> tuple[Mapping[str, Any], Outcome]:
        """Wait until the work is over (or defer); raises :class:`RemoteJobTimeout` at the deadline.

        :param external_id: the work.
        :param resource: its state as already fetched.
        :param deadline: from :meth:`begin_wait`.
        """
        return wait_until_done(
            self,
            resource,
            fetch=lambda: self.fetch(external_id),
            outcome=self.outcome,
            deadline=deadline,
            poll_interval=self.poll_interval,
            describe=self.describe(external_id),
            give_up=lambda last: self.give_up(external_id, last),
            trigger=(lambda: self.make_trigger(external_id, deadline)) if self.deferrable else None,
        )

    def make_trigger(self, external_id: Any, deadline: float | None) -> AnalyticsPollTrigger:
        """The trigger that waits for this work.

        :param external_id: the work.
        :param deadline: epoch seconds when the trigger gives up.
        """
        module_name, _, class_name = self.trigger_class_path.rpartition(".")
        trigger_class = getattr(importlib.import_module(module_name), class_name)
        trigger: AnalyticsPollTrigger = trigger_class(
            **self.trigger_target(external_id),
            poll_interval=self.poll_interval,
            deadline=deadline,
            analytics_conn_id=self.analytics_conn_id,
            cancel_on_kill=self.cancels_on_kill,
            try_number=self.waiting_try,
        )
        return trigger

    def replayed_from_earlier_try(self, event: object, context: Context) -> bool:
        """Whether the task was resumed with an earlier try's event (Airflow 3.0), logged; it should start over.

        :param event: what ``execute_complete`` was called with.
        :param context: the task's context.
        """
        earlier = from_earlier_try(event, context)
        if earlier is None:
            return False
        self.log.warning(
            "Airflow resumed try %s with the event of try %s (apache/airflow#56704, Airflow 3.0): starting over",
            try_number_of(context),
            earlier,
        )
        return True

    def resume(self, event: object, expected_id: Any) -> tuple[Any, Mapping[str, Any], Outcome]:
        """Read the event a deferred wait resumed with: the work, its last state and the verdict.

        :param event: what ``execute_complete`` was called with.
        :param expected_id: the work this task waits on, if it knows (checked against the event).
        :raises RemoteJobTimeout: the trigger reached the deadline.
        :raises RemoteJobFailed: the trigger ended on a permanent error.
        """
        expected = self.trigger_target(expected_id) if expected_id is not None else {}
        checked = checked_event(event, self.kind, self.task_id, expected)
        external_id = self.external_id_of_target(checked["target"])
        resource = checked["resource"]
        if checked["status"] == "timeout":
            self.give_up(external_id, resource or {})
        if checked["status"] == "error" or resource is None:
            raise RemoteJobFailed(f"{self.describe(external_id)}: {checked['message']}")
        return external_id, resource, "success" if checked["status"] == "success" else "failure"

    def failed(self, external_id: Any, resource: Mapping[str, Any]) -> NoReturn:
        """Fail the task for work that ended in failure, with the platform's error.

        :param external_id: the work.
        :param resource: its last state.
        """
        raise RemoteJobFailed(failure_message(self.describe(external_id), resource))

    def give_up(self, external_id: Any, resource: Mapping[str, Any]) -> NoReturn:
        """Fail the task when the wait outlasted its deadline.

        :param external_id: the work.
        :param resource: its last state.
        """
        raise RemoteJobTimeout(self.timeout_message(external_id, resource))

    def timeout_message(self, external_id: Any, resource: Mapping[str, Any]) -> str:
        """How a task that gave up names the work and its last state."""
        return (
            f"gave up waiting for {self.describe(external_id)} (last status {resource.get('status', 'unknown')}) "
            f"after the task's timeout"
        )
