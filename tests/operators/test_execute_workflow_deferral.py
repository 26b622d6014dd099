"""ExecuteWorkflowOperator deferred: its trigger, reattaching on retry, and each way ``execute_complete`` ends."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import AirflowException, TaskDeferred

from airflow_provider_analytics.operators.errors import RemoteJobFailed, RemoteJobTimeout, UnexpectedEventError
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.triggers.executions import ExecutionTrigger
from tests.support.context import INSTANT, SLOW, StubTaskStateStore, TaskContext, make_context
from tests.support.names import POLL, WORKFLOW
from tests.support.releases import HAS_TASK_STATE_STORE
from tests.support.triggers import STARTED, event_for, execution_view, requests_summary, triggerer_event


def defer_execution(sandbox: SandboxServer, **kwargs: Any) -> tuple[TaskDeferred, TaskContext, dict[str, Any]]:
    """Run a deferrable ExecuteWorkflowOperator on slow timings until it defers; return what it did."""
    sandbox.state.set_timings(SLOW)
    op = ExecuteWorkflowOperator(
        task_id="run", workflow_id=kwargs.pop("workflow_id", WORKFLOW), deferrable=True, poll_interval=POLL, **kwargs
    )
    context = make_context()
    with pytest.raises(TaskDeferred) as deferred:
        op.execute(context)
    (execution,) = sandbox.state.executions()
    return deferred.value, context, execution


def test_execute_defers_with_a_trigger_for_the_started_execution(sandbox: SandboxServer) -> None:
    deferred, context, execution = defer_execution(sandbox, inputs={"day": "2026-11-20"})

    trigger = deferred.trigger
    assert isinstance(trigger, ExecutionTrigger)
    assert trigger.target == {"workflow_id": WORKFLOW, "execution_id": execution["id"]}
    assert (trigger.poll_interval, trigger.deadline, trigger.analytics_conn_id) == (POLL, None, "analytics_default")
    assert deferred.method_name == "execute_complete"
    assert deferred.timeout is None
    assert execution["status"] == "queued"
    assert execution["inputs"] == {"day": "2026-11-20"}
    # Started exactly once, with ids and link published and the id stored before waiting.
    posts = [r for r in sandbox.state.requests if r.method == "POST"]
    assert [(r.path, r.status) for r in posts] == [(f"/v1/workflows/{WORKFLOW}/execute", 202)]
    assert posts[0].headers["idempotency-key"].startswith("apa-execution-")
    assert context["ti"].xcom["execution_id"] == execution["id"]
    assert context["ti"].xcom["_link_ExecutionLink"].endswith(f"/ui/workflows/{WORKFLOW}/executions/{execution['id']}")
    # Airflow 3.3's ResumableJobMixin stores the id; common-compat's stand-in before 3.3 stores nothing (a
    # retry finds the execution again through the Idempotency-Key replay).
    stored = {"analytics_execution": {"workflow_id": WORKFLOW, "execution_id": execution["id"]}}
    assert context["task_state_store"].values == (stored if HAS_TASK_STATE_STORE else {})


def test_execute_defers_with_the_timeout_as_the_trigger_deadline(sandbox: SandboxServer) -> None:
    before = time.time()
    deferred, _, _ = defer_execution(sandbox, timeout=30)
    assert deferred.trigger.deadline is not None
    assert before + 30 <= deferred.trigger.deadline <= time.time() + 30
    assert deferred.timeout is not None
    # A backstop beyond the trigger's own deadline, for a lost triggerer.
    assert timedelta(seconds=300) < deferred.timeout <= timedelta(seconds=330)


def test_execute_defers_to_leave_room_before_the_execution_timeout(sandbox: SandboxServer) -> None:
    """The trigger must fire (and cancel) before Airflow kills the task for its ``execution_timeout``."""
    from airflow_provider_analytics.operators._common import EXECUTION_TIMEOUT_MARGIN

    sandbox.state.set_timings(SLOW)
    op = ExecuteWorkflowOperator(
        task_id="run", workflow_id=WORKFLOW, deferrable=True, timeout=3600, execution_timeout=timedelta(minutes=10)
    )
    context = make_context()
    context["ti"].start_date = datetime.now(UTC) - timedelta(minutes=1)
    with pytest.raises(TaskDeferred) as deferred:
        op.execute(context)
    expected = context["ti"].start_date.timestamp() + 600 - EXECUTION_TIMEOUT_MARGIN
    assert deferred.value.trigger.deadline == pytest.approx(expected)


def test_deferred_execution_resumes_with_the_final_execution(sandbox: SandboxServer) -> None:
    deferred, context, execution = defer_execution(sandbox)
    sandbox.state.advance(1300)

    event = triggerer_event(deferred.trigger)
    resumed = ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, deferrable=True)
    result = resumed.execute_complete(context, event)

    assert result == execution_view(sandbox, execution["id"])
    assert result["status"] == "succeeded"
    assert [r.method for r in sandbox.state.requests].count("POST") == 1


def test_execute_does_not_defer_for_an_execution_that_already_finished(sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(INSTANT)
    op = ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, inputs={"day": "2026-11-20"}, deferrable=True)
    context = make_context()

    result = op.execute(context)

    (execution,) = sandbox.state.executions()
    assert result == execution
    assert result["status"] == "succeeded"
    assert result["outputs"]["inputs"] == {"day": "2026-11-20"}
    assert context["ti"].xcom["execution_id"] == execution["id"]


def test_execute_does_not_defer_for_an_execution_that_already_failed(sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(INSTANT)
    op = ExecuteWorkflowOperator(task_id="run", workflow_id="wf_legacy_export", deferrable=True)
    with pytest.raises(RemoteJobFailed) as failed:
        op.execute(make_context())
    (execution,) = sandbox.state.executions()
    error = execution["error"]
    assert str(failed.value) == (
        f"execution {execution['id']} of workflow wf_legacy_export failed: {error['type']}: {error['message']}"
    )


@pytest.mark.skipif(
    not HAS_TASK_STATE_STORE, reason="task_state_store (a retry reattaching to the stored id) needs Airflow 3.3"
)
def test_execute_reattaches_to_the_stored_execution_instead_of_starting_another(sandbox: SandboxServer) -> None:
    deferred, context, _execution = defer_execution(sandbox)
    retry = ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, deferrable=True, poll_interval=POLL)
    retry_context = make_context(task_state_store=context["task_state_store"])
    with pytest.raises(TaskDeferred) as again:
        retry.execute(retry_context)
    assert again.value.trigger.target == deferred.trigger.target
    assert len(sandbox.state.executions()) == 1
    methods = [r.method for r in sandbox.state.requests]
    assert methods.count("POST") == 1
    assert methods.count("GET") == 1  # the reattach reads the stored execution once (docs/operators.md)


@pytest.mark.skipif(
    not HAS_TASK_STATE_STORE, reason="task_state_store (a retry returning the stored, succeeded work) needs Airflow 3.3"
)
def test_a_retry_that_finds_its_stored_execution_succeeded_publishes_it(sandbox: SandboxServer) -> None:
    _deferred, context, execution = defer_execution(sandbox)
    sandbox.state.set_timings(INSTANT)
    sandbox.state.advance(3600)
    retry = ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, deferrable=True, poll_interval=POLL)
    retry_context = make_context(task_state_store=context["task_state_store"])

    result = retry.execute(retry_context)

    assert (result["id"], result["status"]) == (execution["id"], "succeeded")
    assert retry_context["ti"].xcom["execution_id"] == execution["id"]  # as a retry before 3.3 pushes it
    methods = [r.method for r in sandbox.state.requests]
    assert (methods.count("POST"), methods.count("GET")) == (1, 1)


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(None, id="none"),
        pytest.param("success", id="string"),
        pytest.param(["success"], id="list"),
        pytest.param({"status": "success"}, id="no-kind"),
        pytest.param(event_for(STARTED, kind="report"), id="wrong-kind"),
        pytest.param(event_for(STARTED, kind="sync"), id="sync-kind"),
        pytest.param(event_for(STARTED, status="done"), id="unknown-status"),
        pytest.param(event_for(STARTED, status=None), id="no-status"),
    ],
)
def test_execute_complete_rejects_malformed_events(sandbox: SandboxServer, event: Any) -> None:
    op = ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW)
    context = make_context(task_state_store=StubTaskStateStore({"analytics_execution": STARTED}))
    with pytest.raises(AirflowException, match="unexpected trigger event") as raised:
        op.execute_complete(context, event)
    assert raised.type is UnexpectedEventError
    assert sandbox.state.requests == []


def test_execute_complete_rejects_an_event_for_another_execution(sandbox: SandboxServer) -> None:
    op = ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW)
    context = make_context(task_state_store=StubTaskStateStore({"analytics_execution": STARTED}))
    other = {"workflow_id": WORKFLOW, "execution_id": "ex_someoneelse"}
    for status in ("success", "failure", "timeout"):
        with pytest.raises(AirflowException, match=r"unexpected trigger event.*this task waits on") as raised:
            op.execute_complete(context, event_for(other, status=status))
        assert raised.type is UnexpectedEventError
        assert "ex_someoneelse" in str(raised.value)
    assert sandbox.state.requests == []  # in particular: nobody else's execution was cancelled


@pytest.mark.parametrize(
    ("workflow_id", "error"),
    [
        ("wf_legacy_export", None),
        (WORKFLOW, "warehouse credits used up"),
    ],
)
def test_execute_complete_raises_the_platform_error_on_failure(
    sandbox: SandboxServer, workflow_id: str, error: str | None
) -> None:
    if error is not None:
        sandbox.state.set_execution_outcome(workflow_id, "failed", error=error)
    deferred, context, execution = defer_execution(sandbox, workflow_id=workflow_id)
    sandbox.state.advance(1300)
    event = triggerer_event(deferred.trigger)
    assert event["status"] == "failure"

    with pytest.raises(RemoteJobFailed) as failed:
        ExecuteWorkflowOperator(task_id="run", workflow_id=workflow_id).execute_complete(context, event)

    platform_error = execution_view(sandbox, execution["id"])["error"]
    if error is not None:
        assert platform_error == {"type": "step_failed", "message": error}
    assert str(failed.value) == (
        f"execution {execution['id']} of workflow {workflow_id} failed: "
        f"{platform_error['type']}: {platform_error['message']}"
    )


def test_execute_complete_cancels_the_execution_on_timeout(sandbox: SandboxServer) -> None:
    deferred, context, execution = defer_execution(sandbox, timeout=0.2)
    event = triggerer_event(deferred.trigger)
    assert (event["status"], event["resource"]["status"]) == ("timeout", "queued")

    with pytest.raises(RemoteJobTimeout, match="it was cancelled") as timed_out:
        ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, timeout=0.2).execute_complete(context, event)

    assert execution["id"] in str(timed_out.value)
    cancel_path = f"/v1/workflows/{WORKFLOW}/executions/{execution['id']}/cancel"
    assert [(m, s) for m, p, s in requests_summary(sandbox) if p == cancel_path] == [("POST", 202)]
    assert execution_view(sandbox, execution["id"])["status"] == "cancelled"


def test_execute_complete_on_timeout_without_cancel_on_kill_leaves_it_running(sandbox: SandboxServer) -> None:
    deferred, context, execution = defer_execution(sandbox, timeout=0.2, cancel_on_kill=False)
    event = triggerer_event(deferred.trigger)
    with pytest.raises(RemoteJobTimeout, match="it was NOT cancelled"):
        ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, cancel_on_kill=False).execute_complete(
            context, event
        )
    assert not [p for _, p, _ in requests_summary(sandbox) if p.endswith("/cancel")]
    assert execution_view(sandbox, execution["id"])["status"] == "queued"


def test_a_task_killed_as_it_defers_leaves_the_execution_to_its_trigger(sandbox: SandboxServer) -> None:
    """A worker stopped just as the task deferred kills its process after the deferral: on_kill must not cancel the
    execution the trigger now watches (a CI run of make e2e saw one cancelled 0.15 s after it started, then a second
    started)."""
    sandbox.state.set_timings(SLOW)
    op = ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, deferrable=True, poll_interval=POLL)
    with pytest.raises(TaskDeferred):
        op.execute(make_context())
    op.on_kill()  # what the task process runs when it is killed before it exits
    assert not [r.path for r in sandbox.state.requests if r.path.endswith("/cancel")]
    (execution,) = sandbox.state.executions()
    assert execution["status"] in ("queued", "running")
