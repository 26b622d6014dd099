"""A retry resumed with the previous try's trigger event starts over instead of failing the same way.

Airflow 3.0 keeps a deferred task's resume point across a retry (apache/airflow#56704): the next try skips
``execute`` and calls ``execute_complete`` with the event of the try before. The trigger echoes the try that
deferred to it, so the task can tell. These tests build that situation directly, so they run on every
release; the dag.test() retry tests in tests/airflow show it end to end on 3.0.
"""

from __future__ import annotations

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException, TaskDeferred

from airflow_provider_analytics._jobs.events import from_earlier_try
from airflow_provider_analytics.operators.errors import RemoteJobFailed
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor
from tests.support.context import SLOW, retry_context
from tests.support.names import DATA_SOURCE, POLL, WORKFLOW
from tests.support.triggers import rebuilt_through_trigger_row

FAILED_ON_TRY_1 = {"status": "failed", "error": {"type": "quota", "message": "warehouse quota exceeded"}}


def execute_operator() -> ExecuteWorkflowOperator:
    return ExecuteWorkflowOperator(task_id="task", workflow_id=WORKFLOW, poll_interval=POLL, deferrable=True)


def deferred_trigger(try_number: int) -> TaskDeferred:
    with pytest.raises(TaskDeferred) as deferred:
        execute_operator().execute(retry_context(try_number))
    return deferred.value


def failure_event(deferred: TaskDeferred, try_number: int | None) -> dict[str, object]:
    event: dict[str, object] = {
        "status": "failure",
        "kind": "execution",
        "target": deferred.trigger.target,
        "resource": {"id": deferred.trigger.target["execution_id"], **FAILED_ON_TRY_1},
        "message": "execution is failed",
    }
    if try_number is not None:
        event["try_number"] = try_number
    return event


def test_the_trigger_carries_the_try_that_deferred(sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(SLOW)
    deferred = deferred_trigger(1)
    rebuilt = rebuilt_through_trigger_row(deferred.trigger)  # as a triggerer builds it from the stored row
    assert rebuilt.try_number == 1
    assert deferred.trigger.serialize()[1]["try_number"] == 1


def test_an_earlier_tries_event_starts_the_task_over(sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(SLOW)
    first = deferred_trigger(1)
    stale = failure_event(first, try_number=1)

    # Try 2 resumed with try 1's event: it does not fail with that old error, it runs execute again, which
    # finds the same (still running) execution through its Idempotency-Key and defers on it for try 2.
    with pytest.raises(TaskDeferred) as again:
        execute_operator().execute_complete(retry_context(2), stale)

    assert again.value.trigger.target == first.trigger.target
    assert again.value.trigger.try_number == 2
    assert len([e for e in sandbox.state.executions() if e["workflow_id"] == WORKFLOW]) == 1


def test_the_same_tries_event_is_the_outcome(sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(SLOW)
    deferred = deferred_trigger(2)
    with pytest.raises(RemoteJobFailed, match="warehouse quota exceeded"):
        execute_operator().execute_complete(retry_context(2), failure_event(deferred, try_number=2))


def test_an_event_without_a_try_is_the_outcome(sandbox: SandboxServer) -> None:
    # Triggers deferred before this field existed carry no try: their event is taken as the task's own.
    sandbox.state.set_timings(SLOW)
    deferred = deferred_trigger(1)
    with pytest.raises(RemoteJobFailed, match="warehouse quota exceeded"):
        execute_operator().execute_complete(retry_context(2), failure_event(deferred, try_number=None))


def test_the_sensor_starts_over_on_an_earlier_tries_event(sandbox: SandboxServer) -> None:
    sensor = DataSourceSyncedSensor(
        task_id="gate",
        data_source_id=DATA_SOURCE,
        synced_after="2999-01-01T00:00:00Z",  # never fresh: the sensor must defer
        deferrable=True,
        poke_interval=POLL,
    )
    stale = {
        "status": "failure",
        "kind": "sync",
        "target": {"data_source_id": DATA_SOURCE},
        "resource": {"data_source_id": DATA_SOURCE, "status": "failed", "last_attempt_at": "2999-01-02T00:00:00Z"},
        "message": "sync is failed",
        "try_number": 1,
    }
    with pytest.raises(TaskDeferred) as again:
        sensor.execute_complete(retry_context(2), stale)
    assert again.value.trigger.try_number == 2
    stale["try_number"] = 2
    with pytest.raises(AirflowFailException):
        sensor.execute_complete(retry_context(2), stale)


@pytest.mark.parametrize(
    ("event", "current", "expected"),
    [
        ({"try_number": 1}, 2, 1),
        ({"try_number": 2}, 2, None),
        ({"try_number": 3}, 2, None),  # never restart on a newer number: a resume keeps its try
        ({}, 2, None),
        ({"try_number": True}, 2, None),
        ({"try_number": "1"}, 2, None),
        ("not a mapping", 2, None),
        ({"try_number": 1}, None, None),
    ],
)
def test_which_events_count_as_an_earlier_tries(event: object, current: int | None, expected: int | None) -> None:
    context = retry_context(1)
    context["ti"].try_number = current
    assert from_earlier_try(event, context) == expected
