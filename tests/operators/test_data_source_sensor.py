"""DataSourceSyncedSensor at unit level: it defers or answers at once, ``execute_complete`` per event, soft_fail."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import (
    AirflowException,
    AirflowFailException,
    AirflowSensorTimeout,
    AirflowSkipException,
    TaskDeferred,
)

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.errors import UnexpectedEventError
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor
from airflow_provider_analytics.triggers.data_sources import DataSourceSyncTrigger
from tests.support.context import make_context
from tests.support.names import DATA_SOURCE, POLL
from tests.support.triggers import requests_summary, triggerer_event


def sync_event(sandbox: SandboxServer, synced_after: str, deadline: float) -> dict[str, Any]:
    return triggerer_event(
        DataSourceSyncTrigger(
            data_source_id=DATA_SOURCE, synced_after=synced_after, poll_interval=POLL, deadline=deadline
        )
    )


def test_deferrable_sensor_defers_on_stale_data(sandbox: SandboxServer) -> None:
    interval_end = sandbox.state.now()
    sensor = DataSourceSyncedSensor(
        task_id="fresh", data_source_id=DATA_SOURCE, deferrable=True, poke_interval=5, timeout=600
    )
    before = time.time()
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(make_context(data_interval_end=interval_end))
    trigger = deferred.value.trigger
    assert isinstance(trigger, DataSourceSyncTrigger)
    assert trigger.target == {
        "data_source_id": DATA_SOURCE,
        "synced_after": interval_end.isoformat(),
        "fail_on_sync_failure": True,
    }
    assert trigger.poll_interval == 5.0
    assert trigger.deadline is not None
    assert before + 600 <= trigger.deadline <= time.time() + 600
    assert deferred.value.method_name == "execute_complete"
    # Airflow's own timeout is a backstop past the trigger's deadline, for a triggerer that is gone.
    assert deferred.value.timeout is not None
    assert timedelta(seconds=600) < deferred.value.timeout <= timedelta(seconds=900)
    assert deferred.value.kwargs is not None
    assert set(deferred.value.kwargs["deferral"]) == {"at"}  # the sensor shows no link: nothing to hand over
    assert [(m, p) for m, p, _ in requests_summary(sandbox)] == [("GET", f"/v1/data-sources/{DATA_SOURCE}/sync")]


def test_deferrable_sensor_returns_at_once_on_fresh_data(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    long_ago = sandbox.state.now() - timedelta(days=30)
    sensor = DataSourceSyncedSensor(task_id="fresh", data_source_id=DATA_SOURCE, synced_after=long_ago, deferrable=True)
    result = sensor.execute(make_context())
    assert result == dict(hook.get_sync_status(DATA_SOURCE))
    assert result["status"] == "synced"


def test_deferrable_sensor_fails_at_once_on_a_recent_failed_sync(sandbox: SandboxServer) -> None:
    synced_after = sandbox.state.now()
    sandbox.state.start_sync(DATA_SOURCE, outcome="failed")
    sandbox.state.advance(5)
    sensor = DataSourceSyncedSensor(
        task_id="fresh", data_source_id=DATA_SOURCE, synced_after=synced_after, deferrable=True
    )
    with pytest.raises(AirflowFailException, match="sync_failed"):
        sensor.execute(make_context())


def test_sensor_complete_returns_the_status_on_success(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    synced_after = sandbox.state.now().isoformat()
    sandbox.state.start_sync(DATA_SOURCE, outcome="synced")
    event = sync_event(sandbox, synced_after, time.time() + 10)
    assert event["status"] == "success"
    sensor = DataSourceSyncedSensor(task_id="fresh", data_source_id=DATA_SOURCE, synced_after=synced_after)
    result = sensor.execute_complete(make_context(), event)
    assert result == event["resource"] == dict(hook.get_sync_status(DATA_SOURCE))


def test_sensor_complete_fails_on_a_failed_sync(sandbox: SandboxServer) -> None:
    synced_after = sandbox.state.now().isoformat()
    sandbox.state.start_sync(DATA_SOURCE, outcome="failed")
    event = sync_event(sandbox, synced_after, time.time() + 10)
    assert event["status"] == "failure"
    sensor = DataSourceSyncedSensor(task_id="fresh", data_source_id=DATA_SOURCE, synced_after=synced_after)
    with pytest.raises(AirflowFailException) as failed:
        sensor.execute_complete(make_context(), event)
    assert failed.type is AirflowFailException
    error = event["resource"]["error"]
    assert f"{error['type']}: {error['message']}" in str(failed.value)
    assert event["resource"]["last_attempt_at"] in str(failed.value)


def test_sensor_complete_times_out(sandbox: SandboxServer) -> None:
    synced_after = sandbox.state.now().isoformat()
    event = sync_event(sandbox, synced_after, time.time() + 0.1)
    assert event["status"] == "timeout"
    sensor = DataSourceSyncedSensor(task_id="fresh", data_source_id=DATA_SOURCE, synced_after=synced_after)
    with pytest.raises(AirflowSensorTimeout, match=f"data source {DATA_SOURCE} did not sync in time") as timed_out:
        sensor.execute_complete(make_context(), event)
    assert timed_out.type is AirflowSensorTimeout


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(None, id="none"),
        pytest.param("success", id="string"),
        pytest.param({"status": "success", "kind": "sync"}, id="no-target"),
        pytest.param(
            {"status": "success", "kind": "execution", "target": {"data_source_id": DATA_SOURCE}, "resource": {}},
            id="wrong-kind",
        ),
        pytest.param(
            {"status": "success", "kind": "sync", "target": {"data_source_id": "ds_events"}, "resource": {}},
            id="other-data-source",
        ),
    ],
)
def test_sensor_complete_rejects_events_that_are_not_its_own(sandbox: SandboxServer, event: Any) -> None:
    sensor = DataSourceSyncedSensor(task_id="fresh", data_source_id=DATA_SOURCE, synced_after="2026-11-21T10:00:00Z")
    with pytest.raises(AirflowException, match="unexpected trigger event") as raised:
        sensor.execute_complete(make_context(), event)
    assert raised.type is UnexpectedEventError


def failed_sync_since(sandbox: SandboxServer) -> datetime:
    """Make the data source's latest sync fail after the returned time."""
    synced_after = sandbox.state.now()
    sandbox.state.start_sync(DATA_SOURCE, outcome="failed")
    sandbox.state.advance(5)
    return synced_after


def test_sensor_in_poke_mode_skips_a_failed_sync_with_soft_fail(sandbox: SandboxServer) -> None:
    sensor = DataSourceSyncedSensor(
        task_id="fresh", data_source_id=DATA_SOURCE, synced_after=failed_sync_since(sandbox), soft_fail=True
    )
    with pytest.raises(AirflowSkipException):
        sensor.execute(make_context())


def test_deferrable_sensor_skips_a_failed_sync_with_soft_fail(sandbox: SandboxServer) -> None:
    sensor = DataSourceSyncedSensor(
        task_id="fresh",
        data_source_id=DATA_SOURCE,
        synced_after=failed_sync_since(sandbox),
        soft_fail=True,
        deferrable=True,
    )
    with pytest.raises(AirflowSkipException):
        sensor.execute(make_context())


def test_resumed_sensor_skips_a_failed_sync_with_soft_fail(sandbox: SandboxServer) -> None:
    """Airflow resumes through ``resume_execution``, which applies ``soft_fail`` to ``execute_complete``."""
    synced_after = sandbox.state.now().isoformat()
    sandbox.state.start_sync(DATA_SOURCE, outcome="failed")
    event = sync_event(sandbox, synced_after, time.time() + 10)
    assert event["status"] == "failure"
    sensor = DataSourceSyncedSensor(
        task_id="fresh", data_source_id=DATA_SOURCE, synced_after=synced_after, soft_fail=True
    )
    with pytest.raises(AirflowSkipException):
        sensor.resume_execution("execute_complete", {"event": event}, make_context())
