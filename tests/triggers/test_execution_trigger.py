"""ExecutionTrigger's poll loop against the sandbox: success, failure, timeout, transient and final errors."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import quote

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.triggers.executions import ExecutionTrigger
from tests.support.context import SLOW
from tests.support.names import CONN_ENV, POLL, WORKFLOW
from tests.support.triggers import execution_path, execution_view, only_event, requests_to, set_connection, soon


def test_execution_trigger_fires_success(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    execution = hook.execute_workflow(WORKFLOW, {"day": "2026-11-20"})
    trigger = ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=soon())

    event = only_event(trigger)

    final = execution_view(sandbox, execution["id"])
    assert final["status"] == "succeeded"
    assert event == {
        "status": "success",
        "kind": "execution",
        "target": {"workflow_id": WORKFLOW, "execution_id": execution["id"]},
        "resource": final,
        "message": f"execution {execution['id']} of workflow {WORKFLOW} succeeded",
    }
    assert event["resource"]["outputs"]["inputs"] == {"day": "2026-11-20"}
    gets = requests_to(sandbox, execution_path(WORKFLOW, execution["id"]))
    assert len(gets) >= 2  # it polled until the end
    assert set(gets) == {200}


@pytest.mark.parametrize(
    ("workflow_id", "error"),
    [
        ("wf_legacy_export", None),
        (WORKFLOW, {"type": "quota_exceeded", "message": "warehouse credits used up"}),
    ],
)
def test_execution_trigger_fires_failure(
    sandbox: SandboxServer, hook: AnalyticsHook, workflow_id: str, error: dict[str, str] | None
) -> None:
    if error is not None:
        sandbox.state.set_execution_outcome(workflow_id, "failed", error=error)
    execution = hook.execute_workflow(workflow_id)
    trigger = ExecutionTrigger(
        workflow_id=workflow_id, execution_id=execution["id"], poll_interval=POLL, deadline=soon()
    )

    event = only_event(trigger)

    final = execution_view(sandbox, execution["id"])
    assert event == {
        "status": "failure",
        "kind": "execution",
        "target": {"workflow_id": workflow_id, "execution_id": execution["id"]},
        "resource": final,
        "message": f"execution {execution['id']} of workflow {workflow_id} failed",
    }
    assert final["status"] == "failed"
    if error is None:
        assert final["error"]["type"] == "step_failed"
    else:
        assert final["error"] == error


def test_execution_trigger_fires_failure_for_a_cancelled_execution(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    sandbox.state.set_timings(SLOW)
    execution = hook.execute_workflow(WORKFLOW)
    hook.cancel_execution(WORKFLOW, execution["id"])
    event = only_event(
        ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=soon())
    )
    assert (event["status"], event["resource"]["status"], event["message"]) == (
        "failure",
        "cancelled",
        f"execution {execution['id']} of workflow {WORKFLOW} was cancelled",
    )


def test_execution_trigger_times_out_with_the_last_state_seen(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    sandbox.state.set_timings(SLOW)
    execution = hook.execute_workflow(WORKFLOW)
    trigger = ExecutionTrigger(
        workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=time.time() + 0.4
    )

    event = only_event(trigger)
    # Not before the deadline: read after the event, so a slow machine can only make this later, never earlier.
    assert trigger.deadline is not None
    assert time.time() >= trigger.deadline

    assert event == {
        "status": "timeout",
        "kind": "execution",
        "target": {"workflow_id": WORKFLOW, "execution_id": execution["id"]},
        "resource": execution_view(sandbox, execution["id"]),
        "message": f"gave up waiting for execution {execution['id']} of workflow {WORKFLOW}",
    }
    assert event["resource"]["status"] == "queued"
    # It polled until then (how often depends on the machine's speed, so only "at least once" is checked)
    # and only read: nothing was cancelled or started.
    polls = requests_to(sandbox, execution_path(WORKFLOW, execution["id"]))
    assert set(polls) == {200}  # at least one, each answered
    assert [r.method for r in sandbox.state.requests] == ["POST"] + ["GET"] * len(polls)


def test_execution_trigger_with_a_past_deadline_polls_once_then_times_out(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    sandbox.state.set_timings(SLOW)
    execution = hook.execute_workflow(WORKFLOW)
    trigger = ExecutionTrigger(
        workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=60, deadline=time.time() - 1
    )

    event = only_event(trigger)

    assert event["status"] == "timeout"
    assert event["resource"]["status"] == "queued"
    assert requests_to(sandbox, execution_path(WORKFLOW, execution["id"])) == [200]


def test_past_deadline_still_reports_a_finished_execution_as_success(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    """A triggerer restarted after the deadline must not time out work that already succeeded."""
    execution = hook.execute_workflow(WORKFLOW)
    sandbox.state.advance(60)
    event = only_event(
        ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=60, deadline=time.time() - 1)
    )
    assert event["status"] == "success"


@pytest.mark.parametrize(
    ("fault", "recorded"),
    [
        pytest.param(lambda path: Fault.status(503, path=path, times=3), 503, id="503"),
        pytest.param(lambda path: Fault.status(429, path=path, times=3), 429, id="429"),
        pytest.param(lambda path: Fault.drop(path=path, times=3), 0, id="dropped-connection"),
    ],
)
def test_execution_trigger_keeps_polling_through_transient_errors(
    sandbox: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch, fault: Any, recorded: int
) -> None:
    execution = hook.execute_workflow(WORKFLOW)
    path = execution_path(WORKFLOW, execution["id"])
    set_connection(monkeypatch, sandbox, max_retries=0)  # so each fault reaches the trigger itself
    sandbox.state.inject(fault(f"{path}$"))

    event = only_event(
        ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=soon())
    )

    assert event["status"] == "success"
    assert event["resource"] == execution_view(sandbox, execution["id"])
    statuses = requests_to(sandbox, path)
    assert statuses[:3] == [recorded] * 3
    assert statuses[3:]
    assert set(statuses[3:]) == {200}


def test_execution_trigger_times_out_when_the_platform_never_recovers(
    sandbox: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    execution = hook.execute_workflow(WORKFLOW)
    path = execution_path(WORKFLOW, execution["id"])
    set_connection(monkeypatch, sandbox, max_retries=0)
    sandbox.state.inject(Fault.status(503, path=f"{path}$", times=1000))

    event = only_event(
        ExecutionTrigger(
            workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=time.time() + 0.3
        )
    )

    assert event["status"] == "timeout"
    assert event["resource"] is None  # never saw a state
    statuses = requests_to(sandbox, path)
    assert len(statuses) >= 2
    assert set(statuses) == {503}


def test_execution_trigger_reports_unknown_execution_as_error(sandbox: SandboxServer) -> None:
    trigger = ExecutionTrigger(
        workflow_id=WORKFLOW, execution_id="ex_doesnotexist", poll_interval=POLL, deadline=soon()
    )

    event = only_event(trigger)

    assert event["status"] == "error"
    assert event["resource"] is None
    assert event["target"] == {"workflow_id": WORKFLOW, "execution_id": "ex_doesnotexist"}
    assert "404" in event["message"]
    assert "not_found" in event["message"]
    assert requests_to(sandbox, execution_path(WORKFLOW, "ex_doesnotexist")) == [404]  # not retried, not re-polled


def test_execution_trigger_reports_a_rejected_token_as_error(
    sandbox: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    execution = hook.execute_workflow(WORKFLOW)
    set_connection(monkeypatch, sandbox, token="not-a-valid-token")

    event = only_event(
        ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=soon())
    )

    assert event["status"] == "error"
    assert event["resource"] is None
    assert "401" in event["message"]
    assert "not-a-valid-token" not in event["message"]
    assert requests_to(sandbox, execution_path(WORKFLOW, execution["id"])) == [401]


def test_error_after_a_successful_poll_keeps_the_last_state(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    sandbox.state.set_timings(SLOW)
    execution = hook.execute_workflow(WORKFLOW)
    path = execution_path(WORKFLOW, execution["id"])
    # Faults are consumed in order: the first poll gets the normal answer (queued), the second a 403.
    sandbox.state.inject(Fault.delay(0, path=f"{path}$"), Fault.status(403, path=f"{path}$"))

    event = only_event(
        ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=soon())
    )

    assert event["status"] == "error"
    assert "403" in event["message"]
    assert event["resource"] == execution_view(sandbox, execution["id"])
    assert event["resource"]["status"] == "queued"
    assert requests_to(sandbox, path) == [200, 403]


@pytest.mark.parametrize("form", ["json", "uri"])
def test_the_connection_is_never_looked_up_on_the_event_loop(
    sandbox: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    """A blocking lookup inside the triggerer's event loop is what broke other providers.

    Airflow 3.3.2+ looks ``AIRFLOW_CONN_*`` up with ``aget_connection``; before (2.11 to 3.3.1),
    common-compat's ``get_async_connection`` runs the blocking ``get_connection`` in a worker thread. Either
    way, no blocking lookup may run on the loop's own thread.
    """
    from airflow.providers.common.compat.sdk import BaseHook

    execution = hook.execute_workflow(WORKFLOW)
    if form == "uri":  # extras arrive as strings; the host, with its scheme, percent-encoded
        monkeypatch.setenv(CONN_ENV, f"analytics://:{sandbox.token}@{quote(sandbox.base_url, safe='')}")
    blocking = BaseHook.get_connection.__func__  # type: ignore[attr-defined]
    lookups: list[str] = []

    def recorded(cls: Any, conn_id: str) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            lookups.append(f"{conn_id} in a worker thread")
        else:
            lookups.append(f"{conn_id} on the event loop")
        return blocking(cls, conn_id)

    monkeypatch.setattr(BaseHook, "get_connection", classmethod(recorded))
    event = only_event(
        ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=soon())
    )
    assert event["status"] == "success"
    assert not [lookup for lookup in lookups if "on the event loop" in lookup], lookups
