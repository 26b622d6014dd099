"""How waits word their states, failures and timeouts: English a new user reads without knowing the API's enums.

A state reads as a clause (``report rp_1 failed``, never ``report rp_1 is failed``); a failure adds the platform's
error; a timeout says the limit that ended the wait, in seconds, and the setting that lengthens it.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import AirflowSensorTimeout

from airflow_provider_analytics._jobs.base import RemoteJob
from airflow_provider_analytics._jobs.executions import ExecutionJob
from airflow_provider_analytics._jobs.reports import ReportJob
from airflow_provider_analytics._jobs.syncs import SyncJob
from airflow_provider_analytics.operators.errors import RemoteJobFailed, RemoteJobTimeout
from airflow_provider_analytics.operators.reports import DownloadReportOperator
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor
from airflow_provider_analytics.triggers.data_sources import DataSourceSyncTrigger
from tests.support.context import SLOW, make_context
from tests.support.names import DATA_SOURCE, POLL, WORKFLOW
from tests.support.triggers import event_for, triggerer_event

EXECUTION = ExecutionJob(workflow_id="wf_1", execution_id="ex_1")
REPORT = ReportJob(report_id="rp_1")
AFTER = "2026-11-20T10:00:00+00:00"
SYNC = SyncJob(data_source_id="ds_1", synced_after=AFTER)
BEFORE, LATER = "2026-11-19T08:00:00Z", "2026-11-20T11:00:00Z"


@pytest.mark.parametrize(
    ("wait", "resource", "reads"),
    [
        (EXECUTION, {"status": "queued"}, "execution ex_1 of workflow wf_1 is queued"),
        (EXECUTION, {"status": "running"}, "execution ex_1 of workflow wf_1 is running"),
        (EXECUTION, {"status": "succeeded"}, "execution ex_1 of workflow wf_1 succeeded"),
        (EXECUTION, {"status": "failed"}, "execution ex_1 of workflow wf_1 failed"),
        (EXECUTION, {"status": "cancelled"}, "execution ex_1 of workflow wf_1 was cancelled"),
        (EXECUTION, {"status": "paused"}, "execution ex_1 of workflow wf_1 is paused"),  # one the contract lacks
        (REPORT, {"status": "pending"}, "report rp_1 is pending"),
        (REPORT, {"status": "generating"}, "report rp_1 is being generated"),
        (REPORT, {"status": "ready"}, "report rp_1 is ready"),
        (REPORT, {"status": "failed"}, "report rp_1 failed"),
        (REPORT, {"status": "expired"}, "report rp_1 expired"),
        (SYNC, {"status": "synced", "last_synced_at": LATER}, f"data source ds_1 synced at {LATER}"),
        (
            SYNC,
            {"status": "failed", "last_synced_at": BEFORE, "last_attempt_at": LATER},
            f"the sync of data source ds_1 failed at {LATER}",
        ),
        (SYNC, {"status": "never_synced", "last_synced_at": None}, "data source ds_1 has never synced"),
        (
            SYNC,
            {"status": "synced", "last_synced_at": BEFORE},
            f"data source ds_1 last synced at {BEFORE}, before {AFTER}",
        ),
        (
            SYNC,
            {"status": "syncing", "last_synced_at": BEFORE},
            f"data source ds_1 is syncing (last synced at {BEFORE}, before {AFTER})",
        ),
        (
            SYNC,
            {"status": "pending", "last_synced_at": None},
            "data source ds_1 has a sync pending (never synced before)",
        ),
        (
            SYNC,
            {"status": "failed", "last_synced_at": BEFORE, "last_attempt_at": BEFORE},
            f"data source ds_1 failed its last sync (last synced at {BEFORE}, before {AFTER})",
        ),
    ],
)
def test_each_state_reads_as_english(wait: RemoteJob, resource: dict[str, Any], reads: str) -> None:
    assert wait.state_of(resource) == reads


def test_a_cancelled_execution_fails_the_task_saying_so_with_the_platforms_error() -> None:
    target = {"workflow_id": WORKFLOW, "execution_id": "ex_1"}
    cancelled = {"status": "cancelled", "error": {"type": "cancelled", "message": "stopped by ops"}}
    event = event_for(target, status="failure", resource=cancelled)
    with pytest.raises(RemoteJobFailed) as failed:
        ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW).execute_complete(make_context(), event)
    assert str(failed.value) == f"execution ex_1 of workflow {WORKFLOW} was cancelled: cancelled: stopped by ops"


def test_a_wait_on_the_worker_that_times_out_says_its_timeout_and_what_to_change(sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(SLOW)
    operator = ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, poll_interval=POLL, timeout=0.3)
    with pytest.raises(RemoteJobTimeout) as timed_out:
        operator.execute(make_context())
    [execution] = sandbox.state.executions()
    assert str(timed_out.value) == (
        f"gave up waiting for execution {execution['id']} of workflow {WORKFLOW} after timeout=0.3 s "
        "(last status: queued); it was cancelled. To wait longer, raise `timeout` (with deferrable=True a long "
        "wait holds no worker slot)"
    )


def test_a_wait_cut_short_by_the_execution_timeout_says_so(sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(SLOW)
    operator = ExecuteWorkflowOperator(
        task_id="t", workflow_id=WORKFLOW, poll_interval=POLL, execution_timeout=timedelta(seconds=1)
    )
    with pytest.raises(RemoteJobTimeout) as timed_out:
        operator.execute(make_context())
    assert "after 0.9 s, just before the task's execution_timeout of 1 s (last status: queued)" in str(timed_out.value)
    assert str(timed_out.value).endswith("To wait longer, raise the task's `execution_timeout` (with deferrable=True "
                                         "a long wait holds no worker slot)")  # fmt: skip


def test_a_deferred_wait_that_timed_out_names_its_timeout_without_suggesting_deferral() -> None:
    target = {"workflow_id": WORKFLOW, "execution_id": "ex_1"}
    event = event_for(target, status="timeout", resource={"status": "running"})
    operator = ExecuteWorkflowOperator(
        task_id="t", workflow_id=WORKFLOW, deferrable=True, timeout=60, cancel_on_kill=False
    )
    with pytest.raises(RemoteJobTimeout) as timed_out:
        operator.execute_complete(make_context(), event)
    assert str(timed_out.value) == (
        f"gave up waiting for execution ex_1 of workflow {WORKFLOW} after timeout=60 s (last status: running); "
        "it was NOT cancelled. To wait longer, raise `timeout`"
    )


def test_a_download_that_timed_out_waiting_for_its_report_names_its_timeout(tmp_path: Any) -> None:
    event = event_for({"report_id": "rp_1"}, status="timeout", kind="report", resource={"status": "generating"})
    operator = DownloadReportOperator(task_id="d", report_id="rp_1", destination=f"{tmp_path}/", timeout=120)
    with pytest.raises(RemoteJobTimeout) as timed_out:
        operator.execute_complete(make_context(), event)
    assert str(timed_out.value) == (
        "gave up waiting for report rp_1 after timeout=120 s (last status: generating). To wait longer, raise "
        "`timeout` (with deferrable=True a long wait holds no worker slot)"
    )


def test_a_deferred_sensor_that_timed_out_names_its_timeout_and_the_last_state(sandbox: SandboxServer) -> None:
    synced_after = sandbox.state.now().isoformat()
    trigger = DataSourceSyncTrigger(
        data_source_id=DATA_SOURCE, synced_after=synced_after, poll_interval=POLL, deadline=time.time() + 0.3
    )
    event = triggerer_event(trigger)
    assert event["status"] == "timeout"
    sensor = DataSourceSyncedSensor(task_id="fresh", data_source_id=DATA_SOURCE, synced_after=synced_after, timeout=60)
    with pytest.raises(AirflowSensorTimeout) as timed_out:
        sensor.execute_complete(make_context(), event)
    last_synced = event["resource"]["last_synced_at"]
    assert str(timed_out.value) == (
        f"data source {DATA_SOURCE} did not sync in time: no sync after {synced_after} within timeout=60 s; at the "
        f"last check data source {DATA_SOURCE} last synced at {last_synced}, before {synced_after}. To wait longer, "
        "raise `timeout`"
    )
