"""Start remote work, then wait for it on the worker or by deferring, without ever starting it twice.

:class:`RemoteJobOperator` is the one implementation of "start, push ids and links, check, wait or defer,
validate the event, cancel on kill" behind ``ExecuteWorkflowOperator`` and ``GenerateReportOperator``.
Airflow's ``ResumableJobMixin`` stores the remote id in ``task_state_store`` right after the start, so a
retried task reattaches to running work, returns finished work, and starts afresh only after a failure.
The ``Idempotency-Key`` of the start is derived from the task instance and the previous (failed) id, so
even a worker that dies between the start and storing the id gets the same work back on its retry.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, NoReturn

from airflow.providers.common.compat.sdk import Context, ResumableJobMixin, conf

from airflow_provider_analytics.operators.common import task_instance_key
from airflow_provider_analytics.operators.waiting import RemoteJobFailed, RemoteJobTimeout, RemoteWaitOperator
from airflow_provider_analytics.wire.errors import AnalyticsError, ConflictError

__all__ = ["RemoteJobFailed", "RemoteJobOperator", "RemoteJobTimeout"]


class RemoteJobOperator(ResumableJobMixin, RemoteWaitOperator):
    """Base of operators that start one piece of remote work and wait for it.

    :param wait_for_completion: wait until the work is finished; else return it as started.
    :param deferrable: wait in the triggerer instead of holding a worker slot.
    :param poll_interval: seconds (or a ``timedelta``) between polls.
    :param timeout: seconds (or a ``timedelta``) to wait at most; ``None`` waits without limit.
    :param cancel_on_kill: cancel the remote work when the task is killed or times out.
    """

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
        super().__init__(deferrable=deferrable, poll_interval=poll_interval, timeout=timeout, **kwargs)
        self.wait_for_completion = wait_for_completion
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
    def publish(self, context: Context, external_id: Any) -> None:
        """Push ids and links to XCom so users can follow the work while it runs."""

    def cancel(self, external_id: Any) -> bool:
        """Cancel the work; ``False`` when the platform cannot cancel this kind of work."""
        return False

    @property
    def cancels_on_kill(self) -> bool:
        return self.cancel_on_kill

    # The flow ----------------------------------------------------------------------------------------

    def execute(self, context: Context) -> Any:
        self.validate()
        self._deadline = self.wait_deadline(context)
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
        resource, outcome = self.wait_for(external_id, resource, self._deadline)
        return self._finish(external_id, resource, outcome)

    def get_job_result(self, external_id: Any, context: Context) -> Any:
        return dict(self.fetch(external_id))

    def execute_complete(self, context: Context, event: Any = None) -> Any:
        """Resume after the trigger fired: check the event is ours and well-formed, then finish."""
        store = context.get("task_state_store")
        started = store.get(self.external_id_key) if store is not None else None
        external_id, resource, outcome = self.resume(event, started)
        return self._finish(external_id, resource, outcome)

    def on_kill(self) -> None:
        self._killed = True
        if self.cancel_on_kill and self._running_id is not None:
            self.log.info("Task killed: cancelling %s", self.describe(self._running_id))
            self._cancel_quietly(self._running_id)

    # Helpers ------------------------------------------------------------------------------------------

    def _finish(self, external_id: Any, resource: Mapping[str, Any], outcome: str) -> dict[str, Any]:
        if outcome != "success":
            self.failed(external_id, resource)
        self.log.info("%s is %s", self.describe(external_id), resource.get("status"))
        return dict(resource)

    def failed(self, external_id: Any, resource: Mapping[str, Any]) -> NoReturn:
        if self._killed:
            raise RemoteJobFailed(
                f"the task was killed; {self.describe(external_id)} "
                + ("was cancelled" if self.cancel_on_kill else f"is {resource.get('status')} (cancel_on_kill is off)")
            )
        super().failed(external_id, resource)

    def give_up(self, external_id: Any, resource: Mapping[str, Any]) -> NoReturn:
        """Cancel the work (with ``cancel_on_kill``), then fail the task for its timeout."""
        cancelled = self.cancel_on_kill and self._cancel_quietly(external_id)
        raise RemoteJobTimeout(
            self.timeout_message(external_id, resource)
            + ("; it was cancelled" if cancelled else "; it was NOT cancelled")
        )

    def _cancel_quietly(self, external_id: Any) -> bool:
        try:
            return self.cancel(external_id)
        except ConflictError:
            return False  # it finished meanwhile: nothing to cancel
        except AnalyticsError as exc:
            self.log.warning("Could not cancel %s: %s", self.describe(external_id), exc)
            return False
