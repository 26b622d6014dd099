"""Wait for a workflow execution that something else started: another task, another DAG, or no DAG at all."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from airflow.providers.common.compat.sdk import AirflowSensorTimeout, BaseSensorOperator, PokeReturnValue

from airflow_provider_analytics import operators  # its _runtime: what a task uses once it runs
from airflow_provider_analytics.hooks import DEFAULT_CONN_ID
from airflow_provider_analytics.operators._common import (
    DEFAULT_DEFERRABLE,
    AnalyticsBaseOperator,
    check_poke_durations,
    handed_links,
    poll_seconds,
    task_step,
)
from airflow_provider_analytics.operators.links import ExecutionLink
from airflow_provider_analytics.operators.waiting import (
    DEFER_BACKSTOP_SECONDS,
    NOTHING_SEEN,
    log_poll,
    read_event,
    started_over,
)

if TYPE_CHECKING:
    from collections.abc import Collection

    from airflow.providers.common.compat.sdk import Context

    from airflow_provider_analytics._jobs.executions import ExecutionJob

__all__ = ["WorkflowExecutionSensor"]


class WorkflowExecutionSensor(AnalyticsBaseOperator, BaseSensorOperator):
    """Succeed once a workflow execution started elsewhere is over; returns the final execution.

    For an execution this task did not start: one an upstream ``ExecuteWorkflowOperator(wait_for_completion=False)``
    started (its id is in that task's XCom under ``execution_id``), or one started by another DAG or outside
    Airflow. An execution whose final status is in ``fail_on`` fails the task at once, without retries, with the
    platform's error type and message (or skips it with ``soft_fail``); any other final status is returned like
    success. Works in poke, reschedule and deferrable modes, with the wait the operators use
    (:class:`~airflow_provider_analytics.triggers.executions.ExecutionTrigger` when deferred). The sensor never
    cancels the execution: not when it is killed, not when it times out.

    :param workflow_id: the execution's workflow (templated).
    :param execution_id: the execution (templated), e.g.
        ``"{{ ti.xcom_pull(task_ids='start', key='execution_id') }}"``.
    :param fail_on: the final statuses that fail the task, out of ``failed`` and ``cancelled`` (default both);
        ``("failed",)`` returns a cancelled execution, ``()`` returns every final execution.
    :param deferrable: wait in the triggerer (default: ``[operators] default_deferrable``).
    :param poke_interval: seconds (or a ``timedelta``) between checks (Airflow's default: 60).
    :param timeout: seconds (or a ``timedelta``) to wait at most, then the task fails with
        ``AirflowSensorTimeout`` (Airflow's default: 7 days).
    :param mode: ``poke`` (hold a worker slot) or ``reschedule`` (free it between checks); unused when deferrable.
    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    template_fields = ("workflow_id", "execution_id")
    operator_extra_links = (ExecutionLink(),)
    ui_color = "#e6f4ea"

    def __init__(
        self,
        *,
        workflow_id: str,
        execution_id: str,
        fail_on: Collection[str] = ("failed", "cancelled"),
        deferrable: bool = DEFAULT_DEFERRABLE,
        analytics_conn_id: str = DEFAULT_CONN_ID,
        **kwargs: Any,
    ) -> None:
        check_poke_durations(kwargs)
        super().__init__(analytics_conn_id=analytics_conn_id, **kwargs)
        self.workflow_id = workflow_id
        self.execution_id = execution_id
        self.fail_on = fail_on
        self.deferrable = deferrable
        # What the last poke saw in this process: its status, so that a poke logs at INFO only when it changed,
        # and the execution, for the timeout's message. In reschedule mode each poke runs in a new process.
        self._last_status: object = NOTHING_SEEN
        self._last_seen: Mapping[str, Any] = {}
        # The timeout a poke raised for a rate-limit pause past the deadline, which execute passes on as it is.
        self._paused_past: AirflowSensorTimeout | None = None

    def waiting_on(self) -> operators._runtime.ExecutionJob:
        """The execution waited for: the description its trigger runs from too."""
        return operators._runtime.ExecutionJob(workflow_id=self.workflow_id, execution_id=self.execution_id)

    def failing_statuses(self) -> frozenset[str]:
        """``fail_on``, checked: each status must be one the platform ends an execution in failure with."""

        allowed = [
            status.value
            for status in operators._runtime.ExecutionStatus
            if operators._runtime.ExecutionJob.verdict(status.value) == "failure"
        ]
        value: object = self.fail_on
        if not isinstance(value, (tuple, list, set, frozenset)) or any(status not in allowed for status in value):
            raise operators._runtime.AnalyticsInputError(
                f"fail_on must be a tuple of the final statuses that fail the task, each one of {allowed}, got "
                f"{value!r}: fail_on=('failed',) returns a cancelled execution, fail_on=() returns every one"
            )
        return frozenset(value)

    def poke(self, context: Context) -> PokeReturnValue | bool:
        job = self.waiting_on()
        return operators._runtime.poke_under_pauses(
            self, lambda: self._poke(job), lambda why: self._timed_out(job, why)
        )

    def _poke(self, job: ExecutionJob) -> PokeReturnValue | bool:
        # The operators' read: a token rotated while the sensor waits is picked up from the connection.
        execution = self.read(job.fetch())
        self._last_seen = execution
        outcome = job.outcome(execution)
        if outcome is not None:  # a poke that sees the end times the work, as a trigger or a worker's wait does
            operators._runtime.work_ended(job.kind, outcome, job.took(execution))
            return PokeReturnValue(is_done=True, xcom_value=self._finish(job, execution, outcome))
        self._last_status = log_poll(self.log, job, execution, self._last_status, float(self.poke_interval))
        return False

    @task_step
    def execute(self, context: Context) -> Any:
        # A try (or a reschedule) starts in this process and has pushed no link yet: get_link answers from this
        # even when the input is refused below, instead of reading an XCom that was never pushed.
        self.pushed_links = {}
        for name in ("workflow_id", "execution_id"):
            if getattr(self, name) == "None":  # what a template renders when the XCom it pulls is missing
                raise operators._runtime.AnalyticsInputError(
                    f"{name} rendered to 'None': the template found no id. Check that the task it pulls from ran "
                    "and pushed it (ExecuteWorkflowOperator pushes key='execution_id') and that task_ids is right"
                )
            operators._runtime.validate_id(getattr(self, name), name)
        self.failing_statuses()
        poll_seconds(self.poke_interval, "poke_interval")
        job = self.waiting_on()
        self.publish_link(context, ExecutionLink, job.ui_path)
        if not self.deferrable:
            self._paused_past = None
            try:
                return operators._runtime.reschedule_after_pause(self, functools.partial(super().execute, context))
            except AirflowSensorTimeout as timed_out:  # Airflow's own message names neither the work nor its state
                if timed_out is self._paused_past:  # a pause past the deadline: the poke's own message says it all
                    raise
                raise AirflowSensorTimeout(self._timeout_message(job, self._last_seen)) from timed_out

        # Not this task's execution: a kill must never cancel it.
        return operators._runtime.poke_then_defer(
            self, context, job, operators._runtime.ExecutionTrigger, DEFER_BACKSTOP_SECONDS, cancel_on_kill=False
        )

    @task_step
    def execute_complete(self, context: Context, event: Any = None, deferral: Mapping[str, Any] | None = None) -> Any:
        """Resume from the trigger: check the event is this execution's, then return it, fail or time out.

        :param context: the task's context.
        :param event: the trigger's event.
        :param deferral: what :meth:`execute` handed over when it deferred (``at``: epoch seconds; ``links``).
        """
        if started_over(self.log, event, context):
            return self.execute(context)
        self.pushed_links = handed_links(deferral)
        job = self.waiting_on()
        _, checked = read_event(self.log, type(job), self.task_id, event, job.target, deferral)
        execution = checked["resource"]
        if checked["status"] == "timeout":
            raise AirflowSensorTimeout(self._timeout_message(job, execution or {}))
        if checked["status"] == "error" or execution is None:  # a success or failure event always has it
            raise operators._runtime.RemoteWaitError.from_event(checked["message"], checked.get("api_error"))
        return self._finish(job, execution, checked["status"], resumed=True)

    def _finish(
        self, job: ExecutionJob, execution: Mapping[str, Any], outcome: str, *, resumed: bool = False
    ) -> dict[str, Any]:
        """The final execution to return, or the task's failure when its status is in ``fail_on``."""
        if outcome == "failure" and execution.get("status") in self.failing_statuses():
            self._fail(job, execution)
        accepted = "" if outcome == "success" else f" (not in fail_on={tuple(self.fail_on)!r}: returning it)"
        if accepted or not resumed:  # a resumed task's "Resumed from the triggerer" line said it already
            self.log.info("%s%s", job.state_of(execution), accepted)
        return dict(execution)

    def _fail(self, job: ExecutionJob, execution: Mapping[str, Any]) -> NoReturn:
        error = operators._runtime.RemoteJobFailed(
            operators._runtime.failure_message(job.state_of(execution), execution)
        )
        # With soft_fail Airflow replaces this exception with a generic skip: log why first.
        self.log.error("%s", error)
        reason = operators._runtime.why_final(error, failed_work_is_final=True)
        raise operators._runtime.FinalFailure.because(error, reason or "") from None

    def _timed_out(self, job: ExecutionJob, why: str) -> AirflowSensorTimeout:
        """The timeout for a rate-limit pause past the deadline (``poke_under_pauses``), kept for ``execute``."""
        self._paused_past = AirflowSensorTimeout(self._timeout_message(job, self._last_seen, why))
        return self._paused_past

    def _timeout_message(self, job: ExecutionJob, execution: Mapping[str, Any], why: str | None = None) -> str:
        slot = " (with deferrable=True a long wait holds no worker slot)" if not self.deferrable else ""
        status = operators._runtime.clean_text(
            execution.get("status", "unknown"), 200
        )  # platform text: folded and capped
        limit = f"timeout={float(self.timeout):g} s"
        ended, because = (f"after {limit}", "") if why is None else (f"before {limit} ran out", f": {why}")
        return (
            f"gave up waiting for {job.describe()} {ended} (last status: {status}){because}; it was NOT cancelled: "
            f"this task did not start it. To wait longer, raise `timeout`{slot}"
        )
