"""A wait that an API error ends fails the task with ``RemoteWaitError``: on the worker and deferred alike.

It carries the failed poll's status, error type and request id (those the sandbox logged), so a callback or
a reader tells it apart from work that failed (``RemoteJobFailed``) without reading its message.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from airflow_provider_analytics.operators.errors import RemoteJobFailed, RemoteWaitError, UnexpectedEventError
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor
from airflow_provider_analytics.triggers.data_sources import DataSourceSyncTrigger
from airflow_provider_analytics.wire.errors import NotFoundError
from tests.operators.test_execute_workflow_deferral import defer_execution
from tests.support.context import SLOW, make_context
from tests.support.final import raises_final
from tests.support.names import DATA_SOURCE, POLL, WORKFLOW
from tests.support.triggers import event_for, set_connection, triggerer_event


def last_request(sandbox: SandboxServer) -> Any:
    return sandbox.state.requests[-1]


def test_a_deferred_wait_ended_by_a_refused_token(sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    deferred, context, execution = defer_execution(sandbox)
    set_connection(monkeypatch, sandbox, token="revoked-token")
    event = triggerer_event(deferred.trigger)
    refused = last_request(sandbox)
    assert (event["status"], refused.status) == ("error", 401)
    assert event["api_error"] == {"status": 401, "error_type": "unauthenticated", "request_id": refused.request_id}

    with pytest.raises(RemoteWaitError, match="401") as failed:
        ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW).execute_complete(context, event)

    assert (failed.value.status, failed.value.error_type, failed.value.request_id) == (
        401,
        "unauthenticated",
        refused.request_id,
    )
    assert execution["id"] in str(failed.value)
    assert "revoked-token" not in str(failed.value)
    assert not isinstance(failed.value, RemoteJobFailed)  # nothing is known of the execution's own fate


def test_a_wait_on_the_worker_ended_by_a_missing_execution(sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(SLOW)
    sandbox.state.inject(Fault.status(404, method="GET", path="/executions/"))
    op = ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, poll_interval=POLL)

    with raises_final(RemoteWaitError) as failed:
        op.execute(make_context())

    missing = last_request(sandbox)
    assert (missing.method, missing.status) == ("GET", 404)
    assert (failed.value.status, failed.value.error_type, failed.value.request_id) == (
        404,
        "not_found",
        missing.request_id,
    )
    assert isinstance(failed.value.__cause__, NotFoundError)  # the client's own error, typed
    assert str(failed.value).startswith(f"polling execution {sandbox.state.executions()[0]['id']} of workflow")


def test_the_sensor_fails_the_same_way(sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    synced_after = "2026-11-21T10:00:00Z"
    set_connection(monkeypatch, sandbox, token="revoked-token")
    trigger = DataSourceSyncTrigger(
        data_source_id=DATA_SOURCE, synced_after=synced_after, poll_interval=POLL, deadline=time.time() + 10
    )
    event = triggerer_event(trigger)
    sensor = DataSourceSyncedSensor(task_id="fresh", data_source_id=DATA_SOURCE, synced_after=synced_after)

    with pytest.raises(RemoteWaitError, match="401") as failed:
        sensor.execute_complete(make_context(), event)

    assert (failed.value.status, failed.value.request_id) == (401, last_request(sandbox).request_id)
    assert DATA_SOURCE in str(failed.value)


def test_an_error_event_without_the_errors_fields_still_fails_the_task(sandbox: SandboxServer) -> None:
    # The event of a trigger serialized by an earlier release of the provider: it has a message only.
    event = event_for({"workflow_id": WORKFLOW, "execution_id": "ex_1"}, status="error", resource=None)
    op = ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW)
    with pytest.raises(RemoteWaitError) as failed:
        op.execute_complete(make_context(), event)
    assert (failed.value.status, failed.value.error_type, failed.value.request_id) == (None, None, None)
    assert sandbox.state.requests == []


@pytest.mark.parametrize(
    ("api_error", "kept"),
    [
        pytest.param({"status": "401", "error_type": 7, "request_id": ["r"]}, (None, None, None), id="wrong-types"),
        pytest.param({"status": True, "error_type": "x", "request_id": "r"}, (None, "x", "r"), id="bool-status"),
    ],
)
def test_an_error_events_fields_are_kept_only_when_well_typed(
    sandbox: SandboxServer, api_error: dict[str, Any], kept: tuple[Any, ...]
) -> None:
    event = event_for({"workflow_id": WORKFLOW, "execution_id": "ex_1"}, status="error", api_error=api_error)
    with pytest.raises(RemoteWaitError) as failed:
        ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW).execute_complete(make_context(), event)
    assert (failed.value.status, failed.value.error_type, failed.value.request_id) == kept


@pytest.mark.parametrize(
    "event",
    [
        pytest.param({"api_error": "401"}, id="api-error-not-an-object"),
        pytest.param({"status": "success", "resource": None}, id="success-without-its-state"),
    ],
)
def test_a_malformed_event_is_refused_before_anything_is_believed(sandbox: SandboxServer, event: Any) -> None:
    with pytest.raises(UnexpectedEventError):
        ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW).execute_complete(
            make_context(), event_for({"workflow_id": WORKFLOW, "execution_id": "ex_1"}, **event)
        )
