"""WorkflowExecutionSensor at unit level: an execution started elsewhere, sensed in each mode, never cancelled."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from airflow.exceptions import AirflowRescheduleException
from airflow.providers.common.compat.sdk import (
    AirflowException,
    AirflowSensorTimeout,
    AirflowSkipException,
    TaskDeferred,
)

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.errors import (
    FinalFailure,
    RemoteJobFailed,
    RemoteWaitError,
    UnexpectedEventError,
)
from airflow_provider_analytics.operators.links import ExecutionLink
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.sensors.workflows import WorkflowExecutionSensor
from airflow_provider_analytics.triggers.executions import ExecutionTrigger
from airflow_provider_analytics.wire.errors import AnalyticsInputError, ServerError
from tests.support.airflow_runs import needs_airflow
from tests.support.context import SLOW, StubTaskInstance, TaskContext, every_state_lasting, make_context, retry_context
from tests.support.final import raises_final
from tests.support.names import POLL, WORKFLOW
from tests.support.triggers import (
    drain,
    event_for,
    execution_path,
    execution_view,
    rebuilt_through_trigger_row,
    set_connection,
    triggerer_event,
)

FAILING = "wf_legacy_export"  # seeded: its executions always fail


def start(sandbox: SandboxServer, hook: AnalyticsHook, workflow_id: str = WORKFLOW) -> dict[str, Any]:
    """Start an execution the way another task or system would, and forget the request log so far."""
    execution = dict(hook.execute_workflow(workflow_id))
    sandbox.state.request_log.clear()
    return execution


def sensor(execution: dict[str, Any], **kwargs: Any) -> WorkflowExecutionSensor:
    settings: dict[str, Any] = {"poke_interval": POLL, "timeout": 60, **kwargs}
    return WorkflowExecutionSensor(
        task_id="sense", workflow_id=execution["workflow_id"], execution_id=execution["id"], **settings
    )


def only_reads(sandbox: SandboxServer, execution: dict[str, Any]) -> bool:
    """Every request since the start read this execution: nothing was cancelled, started or changed."""
    path = execution_path(execution["workflow_id"], execution["id"])
    return bool(sandbox.state.requests) and all(r.method == "GET" and r.path == path for r in sandbox.state.requests)


def link_of(execution: dict[str, Any]) -> str:
    return f"/ui/workflows/{execution['workflow_id']}/executions/{execution['id']}"


def defer(
    sandbox: SandboxServer, hook: AnalyticsHook, **kwargs: Any
) -> tuple[TaskDeferred, TaskContext, dict[str, Any]]:
    """Start a slow execution and run a deferrable sensor on it until it defers."""
    sandbox.state.set_timings(SLOW)
    execution = start(sandbox, hook, kwargs.pop("workflow_id", WORKFLOW))
    context = kwargs.pop("context", None) or make_context()
    with pytest.raises(TaskDeferred) as deferred:
        sensor(execution, deferrable=True, **kwargs).execute(context)
    return deferred.value, context, execution


class RescheduledTaskInstance(StubTaskInstance):
    """A task instance that knows when its sensor was first rescheduled, as Airflow 3's does."""

    def __init__(self, first_reschedule: datetime | None) -> None:
        super().__init__()
        self.first_reschedule = first_reschedule

    def get_first_reschedule_date(self, context: Any) -> datetime | None:
        return self.first_reschedule


# Airflow 2.11's sensor reads its first reschedule from the metadata database, which these unit tests do not have.
ASKS_THE_TASK_INSTANCE = needs_airflow("3.0", "a sensor in reschedule mode asks the task instance when it began")


# Poke and reschedule modes ------------------------------------------------------------------------------


def test_poke_mode_returns_the_succeeded_execution(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    sandbox.state.set_timings(every_state_lasting(0.2))
    execution = start(sandbox, hook)
    context = make_context()

    result = sensor(execution).execute(context)

    assert result == execution_view(sandbox, execution["id"])
    assert result["status"] == "succeeded"
    assert len(sandbox.state.requests) >= 2  # it saw the execution unfinished at least once
    assert only_reads(sandbox, execution)
    assert context["ti"].xcom["_link_ExecutionLink"].endswith(link_of(execution))


@ASKS_THE_TASK_INSTANCE
def test_reschedule_mode_frees_the_slot_until_the_execution_is_over(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    sandbox.state.set_timings(SLOW)
    execution = start(sandbox, hook)
    with pytest.raises(AirflowRescheduleException):
        sensor(execution, mode="reschedule").execute(make_context(ti=RescheduledTaskInstance(None)))
    assert len(sandbox.state.requests) == 1

    sandbox.state.advance(1300)
    result = sensor(execution, mode="reschedule").execute(make_context(ti=RescheduledTaskInstance(datetime.now(UTC))))

    assert (result["id"], result["status"]) == (execution["id"], "succeeded")
    assert len(sandbox.state.requests) == 2
    assert only_reads(sandbox, execution)


@ASKS_THE_TASK_INSTANCE
def test_reschedule_mode_times_out_naming_the_execution(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    sandbox.state.set_timings(SLOW)
    execution = start(sandbox, hook)
    long_ago = datetime.now(UTC) - timedelta(hours=1)
    with pytest.raises(AirflowSensorTimeout) as timed_out:
        sensor(execution, mode="reschedule", timeout=60).execute(make_context(ti=RescheduledTaskInstance(long_ago)))
    assert str(timed_out.value).startswith(
        f"gave up waiting for execution {execution['id']} of workflow {WORKFLOW} after timeout=60 s "
        "(last status: queued); it was NOT cancelled"
    )
    assert only_reads(sandbox, execution)


def test_poke_mode_times_out_naming_the_execution_and_leaves_it_running(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    sandbox.state.set_timings(SLOW)
    execution = start(sandbox, hook)
    with pytest.raises(AirflowSensorTimeout, match=r"last status: queued\); it was NOT cancelled") as timed_out:
        sensor(execution, timeout=0.3).execute(make_context())
    assert timed_out.type is AirflowSensorTimeout
    assert f"execution {execution['id']} of workflow {WORKFLOW}" in str(timed_out.value)
    assert "deferrable=True" in str(timed_out.value)
    assert only_reads(sandbox, execution)
    assert execution_view(sandbox, execution["id"])["status"] == "queued"


# Failed and cancelled executions --------------------------------------------------------------------------


@pytest.mark.parametrize("deferrable", [False, True], ids=["poke", "defer"])
def test_a_failed_execution_fails_at_once_with_the_platforms_message(
    sandbox: SandboxServer, hook: AnalyticsHook, deferrable: bool
) -> None:
    sandbox.state.set_execution_outcome(WORKFLOW, "failed", error="warehouse credits used up")
    sandbox.state.set_timings(every_state_lasting(0))
    execution = start(sandbox, hook)
    with raises_final(RemoteJobFailed) as failed:
        sensor(execution, deferrable=deferrable, retries=3).execute(make_context())
    assert str(failed.value) == (
        f"execution {execution['id']} of workflow {WORKFLOW} failed: step_failed: warehouse credits used up"
    )
    assert len(sandbox.state.requests) == 1
    with pytest.raises(AirflowSkipException):  # soft_fail skips it, on the worker and before deferring alike
        sensor(execution, deferrable=deferrable, soft_fail=True).execute(make_context())


@pytest.mark.parametrize(
    ("fail_on", "fails"), [(("failed", "cancelled"), True), (("failed",), False), ([], False)], ids=repr
)
def test_a_cancelled_execution_fails_only_when_fail_on_names_it(
    sandbox: SandboxServer, hook: AnalyticsHook, fail_on: Any, fails: bool
) -> None:
    sandbox.state.set_timings(SLOW)
    execution = start(sandbox, hook)
    hook.cancel_execution(WORKFLOW, execution["id"])
    sandbox.state.request_log.clear()
    task = sensor(execution, fail_on=fail_on)
    if fails:
        with raises_final(RemoteJobFailed, match=f"execution {execution['id']} of workflow {WORKFLOW} was cancelled"):
            task.execute(make_context())
    else:
        result = task.execute(make_context())
        assert result == execution_view(sandbox, execution["id"])
        assert result["status"] == "cancelled"
    assert only_reads(sandbox, execution)


def test_fail_on_nothing_returns_a_failed_execution(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    sandbox.state.set_timings(every_state_lasting(0))
    execution = start(sandbox, hook, FAILING)
    result = sensor(execution, fail_on=()).execute(make_context())
    assert (result["status"], result["error"]) == ("failed", execution_view(sandbox, execution["id"])["error"])


def test_a_poke_that_meets_a_server_error_fails_the_try_and_keeps_its_retries(
    sandbox: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox.state.set_timings(SLOW)
    execution = start(sandbox, hook)
    set_connection(monkeypatch, sandbox, max_retries=0)
    sandbox.state.inject(Fault.status(503, method="GET", path="/executions/"))
    with pytest.raises(ServerError) as failed:
        sensor(execution, retries=2).execute(make_context())
    assert not isinstance(failed.value, FinalFailure)
    assert [(r.method, r.status) for r in sandbox.state.requests] == [("GET", 503)]


# Deferred -------------------------------------------------------------------------------------------------


def test_deferrable_mode_defers_to_an_execution_trigger_that_never_cancels(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    before = time.time()
    deferred, context, execution = defer(sandbox, hook, timeout=600)

    trigger = deferred.trigger
    assert isinstance(trigger, ExecutionTrigger)
    _, kwargs = trigger.serialize()
    deadline = kwargs.pop("deadline")
    assert before + 600 <= deadline <= time.time() + 600
    assert kwargs == {
        **{"workflow_id": WORKFLOW, "execution_id": execution["id"], "poll_interval": POLL, "try_number": 1},
        **{"analytics_conn_id": "analytics_default", "cancel_on_kill": False},  # the sensor did not start it
    }
    assert deferred.method_name == "execute_complete"
    assert deferred.timeout is not None
    assert timedelta(seconds=600) < deferred.timeout <= timedelta(seconds=900)  # a backstop past the deadline
    # It looked once, and pushed the execution's link before waiting.
    assert len(sandbox.state.requests) == 1
    assert only_reads(sandbox, execution)
    url = context["ti"].xcom["_link_ExecutionLink"]
    assert url.endswith(link_of(execution))
    assert deferred.kwargs is not None
    assert deferred.kwargs["deferral"]["links"] == {"_link_ExecutionLink": url}


def test_a_deferred_sensor_resumes_with_the_final_execution_and_its_link(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    deferred, context, execution = defer(sandbox, hook)
    sandbox.state.advance(1300)
    event = triggerer_event(deferred.trigger)
    assert event["status"] == "success"

    resumed = sensor(execution, deferrable=True)  # a fresh process: nothing in memory survives a deferral
    assert deferred.kwargs is not None
    result = resumed.execute_complete(context, event, **deferred.kwargs)

    assert result == execution_view(sandbox, execution["id"])
    assert result["status"] == "succeeded"
    # The link the deferring process pushed is known on resume, so the UI's ask needs no XCom read.
    assert ExecutionLink().get_link(resumed, ti_key=None) == context["ti"].xcom["_link_ExecutionLink"]
    assert only_reads(sandbox, execution)


@pytest.mark.parametrize(("fail_on", "fails"), [(("failed", "cancelled"), True), (("failed",), False)])
def test_a_deferred_sensor_resumed_on_a_cancelled_execution(
    sandbox: SandboxServer, hook: AnalyticsHook, fail_on: Any, fails: bool
) -> None:
    deferred, context, execution = defer(sandbox, hook, fail_on=fail_on)
    hook.cancel_execution(WORKFLOW, execution["id"])
    event = triggerer_event(deferred.trigger)
    assert (event["status"], event["resource"]["status"]) == ("failure", "cancelled")
    resumed = sensor(execution, fail_on=fail_on)
    if fails:
        with raises_final(RemoteJobFailed, match="was cancelled"):
            resumed.execute_complete(context, event)
    else:
        assert resumed.execute_complete(context, event) == event["resource"]


def test_a_deferred_sensor_resumed_on_a_failed_execution_fails_or_skips(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    sandbox.state.set_execution_outcome(WORKFLOW, "failed", error={"type": "quota", "message": "over quota"})
    deferred, context, execution = defer(sandbox, hook)
    sandbox.state.advance(1300)
    event = triggerer_event(deferred.trigger)
    with raises_final(RemoteJobFailed, match=r"failed: quota: over quota$"):
        sensor(execution).execute_complete(context, event)
    # Airflow resumes through resume_execution, which applies soft_fail to what execute_complete raised.
    with pytest.raises(AirflowSkipException):
        sensor(execution, soft_fail=True).resume_execution("execute_complete", {"event": event}, context)


def test_a_deferred_sensor_times_out_without_cancelling(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    deferred, context, execution = defer(sandbox, hook, timeout=0.2)
    event = triggerer_event(deferred.trigger)
    assert (event["status"], event["resource"]["status"]) == ("timeout", "queued")
    with pytest.raises(AirflowSensorTimeout, match=r"after timeout=0.2 s \(last status: queued\)") as timed_out:
        sensor(execution, deferrable=True, timeout=0.2).execute_complete(context, event)
    assert execution["id"] in str(timed_out.value)
    assert "deferrable=True" not in str(timed_out.value)  # it was deferred: no advice to defer
    assert only_reads(sandbox, execution)
    assert execution_view(sandbox, execution["id"])["status"] == "queued"


def test_a_resume_with_an_earlier_tries_event_starts_over(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    deferred, _, execution = defer(sandbox, hook, context=retry_context(1))
    stale = event_for(deferred.trigger.target, status="failure", try_number=1)
    stale["resource"] = {**execution, "status": "failed", "error": {"type": "old", "message": "try 1's failure"}}

    with pytest.raises(TaskDeferred) as again:
        sensor(execution, deferrable=True).execute_complete(retry_context(2), stale)
    assert again.value.trigger.target == deferred.trigger.target
    assert again.value.trigger.try_number == 2

    stale["try_number"] = 2  # the same try's event is the outcome
    with raises_final(RemoteJobFailed, match="try 1's failure"):
        sensor(execution, deferrable=True).execute_complete(retry_context(2), stale)


def test_a_triggerer_restart_gives_the_same_event(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    deferred, _, execution = defer(sandbox, hook)
    trigger = deferred.trigger

    async def until_restarted() -> None:
        # The triggerer stops: the running trigger is cancelled (cleanup runs, on_kill does not).
        async for _ in trigger.run():
            raise AssertionError("the execution is still queued: no event yet")

    with pytest.raises(TimeoutError):
        asyncio.run(asyncio.wait_for(until_restarted(), timeout=0.5))
    assert only_reads(sandbox, execution)

    sandbox.state.advance(1300)
    rebuilt = rebuilt_through_trigger_row(trigger)  # as the next triggerer builds it from the stored row
    [event] = [fired.payload for fired in drain(rebuilt)]
    assert [fired.payload for fired in drain(trigger)] == [event]
    assert event["try_number"] == 1
    assert (event["status"], event["resource"]) == ("success", execution_view(sandbox, execution["id"]))
    assert only_reads(sandbox, execution)


def test_killing_the_sensor_never_cancels_the_execution(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    deferred, _, execution = defer(sandbox, hook)
    sensor(execution, deferrable=True).on_kill()  # killed on the worker
    asyncio.run(rebuilt_through_trigger_row(deferred.trigger).on_kill())  # killed while deferred (Airflow 3.3)
    assert only_reads(sandbox, execution)
    assert execution_view(sandbox, execution["id"])["status"] == "queued"


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(None, id="none"),
        pytest.param(event_for({"workflow_id": WORKFLOW, "execution_id": "ex_someoneelse"}), id="other-execution"),
        pytest.param(event_for({"workflow_id": "wf_other", "execution_id": "ex_1"}), id="other-workflow"),
        pytest.param(event_for({"workflow_id": WORKFLOW, "execution_id": "ex_1"}, kind="report"), id="wrong-kind"),
    ],
)
def test_a_resume_with_an_event_that_is_not_its_own_fails(sandbox: SandboxServer, event: Any) -> None:
    resumed = WorkflowExecutionSensor(task_id="sense", workflow_id=WORKFLOW, execution_id="ex_1")
    with pytest.raises(AirflowException, match="unexpected trigger event") as raised:
        resumed.execute_complete(make_context(), event)
    assert raised.type is UnexpectedEventError
    assert sandbox.state.requests == []


def test_a_resume_with_an_error_event_fails_with_the_api_error(sandbox: SandboxServer) -> None:
    target = {"workflow_id": WORKFLOW, "execution_id": "ex_1"}
    api_error = {"status": 404, "error_type": "not_found", "request_id": "req_1"}
    event = event_for(target, status="error", resource=None, api_error=api_error, message="polling failed: 404")
    resumed = WorkflowExecutionSensor(task_id="sense", workflow_id=WORKFLOW, execution_id="ex_1")
    with raises_final(RemoteWaitError, match="polling failed: 404") as failed:
        resumed.execute_complete(make_context(), event)
    assert (failed.value.status, failed.value.request_id) == (404, "req_1")
    assert sandbox.state.requests == []


# Bad input ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param({"workflow_id": "wf one"}, "workflow_id must be", id="workflow-id"),
        pytest.param({"execution_id": "ex/1"}, "execution_id must be", id="execution-id"),
        pytest.param({"execution_id": ""}, "execution_id must be", id="empty-execution-id"),
        pytest.param({"execution_id": "None"}, "execution_id rendered to 'None'", id="missing-xcom"),
        pytest.param({"fail_on": "failed"}, r"fail_on must be a tuple.*got 'failed'", id="fail-on-string"),
        pytest.param({"fail_on": ("succeeded",)}, r"each one of \['failed', 'cancelled'\]", id="fail-on-success"),
        pytest.param({"fail_on": ["failed", "running"]}, "fail_on must be", id="fail-on-running"),
        pytest.param({"fail_on": {"failed": True}}, "fail_on must be", id="fail-on-mapping"),
        pytest.param({"poke_interval": 0.01}, "poke_interval must be at least", id="poke-interval"),
    ],
)
@pytest.mark.parametrize("deferrable", [False, True], ids=["poke", "defer"])
def test_bad_input_fails_before_any_request(
    sandbox: SandboxServer, arguments: dict[str, Any], message: str, deferrable: bool
) -> None:
    settings: dict[str, Any] = {"workflow_id": WORKFLOW, "execution_id": "ex_1", **arguments}
    task = WorkflowExecutionSensor(task_id="sense", deferrable=deferrable, **settings)
    context = make_context()
    with raises_final(AnalyticsInputError, match=message):
        task.execute(context)
    assert sandbox.state.requests == []
    assert context["ti"].xcom == {}  # no link to an execution that was never looked at
    # ... and asked for its link as the task ends, it answers without reading an XCom (ti_key=None would fail one).
    assert ExecutionLink().get_link(task, ti_key=None) == ""


@pytest.mark.parametrize("setting", ["poke_interval", "timeout"])
def test_a_non_positive_duration_fails_when_the_dag_is_parsed(sandbox: SandboxServer, setting: str) -> None:
    durations: dict[str, Any] = {setting: -1}
    with pytest.raises(AnalyticsInputError, match=f"{setting} must be a positive number"):
        WorkflowExecutionSensor(task_id="sense", workflow_id=WORKFLOW, execution_id="ex_1", **durations)
    assert sandbox.state.requests == []
