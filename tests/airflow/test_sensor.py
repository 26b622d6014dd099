"""DataSourceSyncedSensor through real Airflow runs in poke, reschedule and deferrable modes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from airflow_provider_analytics.sandbox.config import Timings
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.airflow_runs import SENSOR_MODES, RunDag, task_output


def source_and_threshold(sandbox: SandboxServer) -> tuple[str, str]:
    source = sandbox.state.data_sources()[0]["id"]
    threshold = (sandbox.state.now() - timedelta(seconds=1)).isoformat()
    return source, threshold


@pytest.mark.parametrize("mode", SENSOR_MODES)
def test_succeeds_once_a_sync_after_the_threshold_completed(run_dag: RunDag, sandbox: SandboxServer, mode: str) -> None:
    sandbox.state.set_timings(Timings(sync_pending=0.3, sync_running=0.7))
    source, threshold = source_and_threshold(sandbox)
    sandbox.state.start_sync(source)
    result = run_dag(f"test_sync_{mode}", data_source_id=source, synced_after=threshold)
    assert result.states == {"wait_for_sync": "success"}
    status = result.xcom("wait_for_sync")
    assert status["data_source_id"] == source
    assert status["last_synced_at"] >= threshold.replace("+00:00", "")


@pytest.mark.parametrize("mode", SENSOR_MODES)
def test_a_stale_synced_status_is_not_enough(run_dag: RunDag, sandbox: SandboxServer, mode: str) -> None:
    # Seeded sources read "synced" but last synced a day ago: the gate must hold until it times out.
    source, threshold = source_and_threshold(sandbox)
    result = run_dag(f"test_sync_{mode}", data_source_id=source, synced_after=threshold)
    assert result.states == {"wait_for_sync": "failed"}


@pytest.mark.parametrize("mode", SENSOR_MODES)
@pytest.mark.parametrize(("suffix", "expected"), [("", "failed"), ("_soft", "skipped")])
def test_a_failed_sync_after_the_threshold_ends_the_wait_at_once(
    run_dag: RunDag, sandbox: SandboxServer, mode: str, suffix: Any, expected: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    source, threshold = source_and_threshold(sandbox)
    sandbox.state.start_sync(source, outcome="failed")
    result = run_dag(f"test_sync_{mode}{suffix}", data_source_id=source, synced_after=threshold)
    assert result.states == {"wait_for_sync": expected}
    output = task_output(capfd.readouterr().out)
    assert f"data source {source}: the sync attempted at" in output
    assert sandbox.token not in output


@pytest.mark.parametrize("mode", SENSOR_MODES)
def test_timeout_with_soft_fail_skips(run_dag: RunDag, sandbox: SandboxServer, mode: str) -> None:
    source, threshold = source_and_threshold(sandbox)
    result = run_dag(f"test_sync_{mode}_soft", data_source_id=source, synced_after=threshold)
    assert result.states == {"wait_for_sync": "skipped"}
