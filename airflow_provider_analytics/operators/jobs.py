"""Start remote work, then wait for it on the worker or by deferring, without ever starting it twice.

:class:`RemoteJobOperator` is the one implementation of "start, push ids and links, check, wait or defer,
validate the event, cancel on kill" behind ``ExecuteWorkflowOperator`` and ``GenerateReportOperator``.
Airflow's ``ResumableJobMixin`` stores the remote id in ``task_state_store`` right after the start, so a
retried task reattaches to running work, returns finished work, and starts afresh only after a failure.
The ``Idempotency-Key`` of the start is derived from the task instance and the previous (failed) id, so
even a worker that dies between the start and storing the id gets the same work back on its retry.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

from airflow.sdk import Context, conf
from airflow.sdk.exceptions import AirflowException

from airflow_provider_analytics.operators.common import AnalyticsBaseOperator, poll_seconds, seconds, task_instance_key
from airflow_provider_analytics.operators.waiting import checked_event, wait_until_done
from airflow_provider_analytics.wire.errors import AnalyticsError, ConflictError
from airflow_provider_analytics.wire.outcomes import Outcome

try:
    from airflow.sdk import ResumableJobMixin
except ImportError:  # Airflow < 3.3: the compat provider's stand-in starts afresh on every try
    from airflow.providers.common.compat.sdk import ResumableJobMixin

if TYPE_CHECKING:
    from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger

# Stop waiting this long before the task's execution_timeout (a tenth of it, at most 15 s), so our own
# deadline fires first and cancels the remote work cleanly instead of Airflow killing the task.
EXECUTION_TIMEOUT_MARGIN = 15.0


class RemoteJobFailed(AirflowException):
    """The remote work ended in failure (its error type and message are in the text)."""


class RemoteJobTimeout(AirflowException):
    """The wait outlasted ``timeout`` (or the task's ``execution_timeout``); the work was cancelled."""


class RemoteJobOperator(ResumableJobMixin, AnalyticsBaseOperator):
    """Base of operators that start one piece of remote work and wait for it.

    :param wait_for_completion: wait until the work is finished; else return it as started.
    :param deferrable: wait in the triggerer instead of holding a worker slot.
    :param poll_interval: seconds (or a ``timedelta``) between polls.
    :param timeout: seconds (or a ``timedelta``) to wait at most; ``None`` waits without limit.
    :param cancel_on_kill: cancel the remote work when the task is killed or times out.
    """

    kind: ClassVar[str]
    noun: ClassVar[str]

    def __init__(
        self,
        *,
        wait_for_completion: bool = True,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        poll_interval: float | timedelta = 10,
        timeout: float | timedelta | None = None,
        cancel_on_kill: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.wait_for_completion = wait_for_completion
        self.deferrable = deferrable
        self.poll_interval = poll_seconds(poll_interval)
        self.timeout = seconds(timeout, "timeout")
        self.cancel_on_kill = cancel_on_kill
        self._running_id: Any = None
        self._killed = False

    # What a concrete operator says --------------------------------------------------------------------

    @abstractmethod
    def validate(self) -> None:
        """Check the (rendered) arguments before any request; raise with what to change."""

    @abstractmethod
    def start(self, context: Context, idempotency_key: str) -> Mapping[str, Any]:
        """Start the work; return it as the platform answered."""

    @abstractmethod
    def external_id(self, resource: Mapping[str, Any]) -> Any:
        """The JSON value that identifies the work (stored in ``task_state_store``)."""

    @abstractmethod
    def external_id_of_target(self, target: Mapping[str, Any]) -> Any:
        """The external id named by a trigger event's ``target``."""

    @abstractmethod
    def fetch(self, external_id: Any) -> Mapping[str, Any]:
        """The work's current state."""

    @abstractmethod
    def outcome(self, resource: Mapping[str, Any]) -> Outcome | None:
        """``success``/``failure`` when the work is over, else ``None``."""

    @abstractmethod
    def make_trigger(self, external_id: Any, deadline: float | None) -> AnalyticsPollTrigger:
        """The trigger that waits for this work."""

    @abstractmethod
    def publish(self, context: Context, external_id: Any) -> None:
        """Push ids and links to XCom so users can follow the work while it runs."""

    def describe(self, external_id: Any) -> str:
        """How logs and errors name the work."""
        return f"{self.noun} {external_id}"

    def cancel(self, external_id: Any) -> bool:
        """Cancel the work; ``False`` when the platform cannot cancel this kind of work."""
        return False

    # The flow ----------------------------------------------------------------------------------------

    def execute(self, context: Context) -> Any:
        self.validate()
        self._deadline = self._wait_deadline(context)
        return self.execute_resumable(context)

    def submit_job(self, context: Context) -> Any:
        store = context.get("task_state_store")
        previous = store.get(self.external_id_key) if store is not None else f"try-{context['ti'].try_number}"
        resource = self.start(context, task_instance_key(context, self.kind, previous))
        external_id = self.external_id(resource)
        self._running_id = external_id  # from here on, on_kill can cancel it
        self.log.info("Started %s (status %s)", self.describe(external_id), resource.get("status"))
        self.publish(context, external_id)
        return external_id

    def get_job_status(self, external_id: Any, context: Context) -> str:
        self._running_id = external_id
        status = self.fetch(external_id).get("status")
        return str(status)

    def is_job_active(self, status: str) -> bool:
        return self.outcome({"status": status}) is None

    def is_job_succeeded(self, status: str) -> bool:
        return self.outcome({"status": status}) == "success"

    # The mixin declares None but returns this value when it reattaches to running work.
    def poll_until_complete(self, external_id: Any, context: Context) -> Mapping[str, Any]:  # type: ignore[override]
        self._running_id = external_id
        self.publish(context, external_id)
        resource = self.fetch(external_id)
        if not self.wait_for_completion:
            return resource
        resource, outcome = wait_until_done(
            self,
            resource,
            fetch=lambda: self.fetch(external_id),
            outcome=self.outcome,
            deadline=self._deadline,
            poll_interval=self.poll_interval,
            describe=self.describe(external_id),
            give_up=lambda last: self._give_up(external_id, last),
            trigger=(lambda: self.make_trigger(external_id, self._deadline)) if self.deferrable else None,
        )
        return self._finish(external_id, resource, outcome)

    def get_job_result(self, external_id: Any, context: Context) -> Any:
        return dict(self.fetch(external_id))

    def execute_complete(self, context: Context, event: Any = None) -> Any:
        """Resume after the trigger fired: check the event is ours and well-formed, then finish."""
        event = checked_event(event, self.kind, self.task_id)
        store = context.get("task_state_store")
        expected = store.get(self.external_id_key) if store is not None else None
        external_id = self.external_id_of_target(event["target"])
        if expected is not None and expected != external_id:
            raise AirflowException(f"{self.task_id}: the event is for {external_id}, this task started {expected}")
        resource = event.get("resource")
        if event["status"] == "timeout":
            self._give_up(external_id, resource or {})
        if event["status"] == "error" or not isinstance(resource, Mapping):
            raise RemoteJobFailed(f"{self.describe(external_id)}: {event.get('message')}")
        return self._finish(external_id, resource, "success" if event["status"] == "success" else "failure")

    def on_kill(self) -> None:
        self._killed = True
        if self.cancel_on_kill and self._running_id is not None:
            self.log.info("Task killed: cancelling %s", self.describe(self._running_id))
            self._cancel_quietly(self._running_id)

    # Helpers ------------------------------------------------------------------------------------------

    def _finish(self, external_id: Any, resource: Mapping[str, Any], outcome: str) -> dict[str, Any]:
        if outcome == "success":
            self.log.info("%s is %s", self.describe(external_id), resource.get("status"))
            return dict(resource)
        if self._killed:
            raise RemoteJobFailed(
                f"the task was killed; {self.describe(external_id)} "
                + ("was cancelled" if self.cancel_on_kill else f"is {resource.get('status')} (cancel_on_kill is off)")
            )
        error = resource.get("error") or {}
        raise RemoteJobFailed(
            f"{self.describe(external_id)} ended {resource.get('status')}: "
            f"{error.get('type', 'unknown_error')}: {error.get('message', 'the platform gave no message')}"
        )

    def _give_up(self, external_id: Any, resource: Mapping[str, Any]) -> NoReturn:
        cancelled = self.cancel_on_kill and self._cancel_quietly(external_id)
        raise RemoteJobTimeout(
            f"gave up waiting for {self.describe(external_id)} (last status {resource.get('status', 'unknown')}) "
            f"after the task's timeout; " + ("it was cancelled" if cancelled else "it was NOT cancelled")
        )

    def _cancel_quietly(self, external_id: Any) -> bool:
        try:
            return self.cancel(external_id)
        except ConflictError:
            return False  # it finished meanwhile: nothing to cancel
        except AnalyticsError as exc:
            self.log.warning("Could not cancel %s: %s", self.describe(external_id), exc)
            return False

    def _wait_deadline(self, context: Context) -> float | None:
        deadlines = []
        if self.timeout is not None:
            deadlines.append(time.time() + self.timeout)
        ti = context.get("ti")
        start = getattr(ti, "start_date", None)
        if self.execution_timeout is not None and start is not None:
            limit = self.execution_timeout.total_seconds()
            deadlines.append(start.timestamp() + limit - min(EXECUTION_TIMEOUT_MARGIN, limit / 10))
        return min(deadlines) if deadlines else None
