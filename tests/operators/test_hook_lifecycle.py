"""Every task closes its hook's HTTP pool when execute or execute_complete ends, however it ends."""

from __future__ import annotations

from typing import Any

import pytest
from airflow.providers.common.compat.sdk import TaskDeferred

from airflow_provider_analytics.operators.charts import GetChartDataOperator
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor
from airflow_provider_analytics.wire.errors import NotFoundError
from tests.support.context import SLOW, make_context
from tests.support.names import WORKFLOW


def _pool_is_closed(task: Any) -> bool:
    """The hook was used, and its client (the connection pool) is gone."""
    return "hook" in task.__dict__ and "client" not in task.hook.__dict__


def test_closed_after_returning(sandbox: SandboxServer) -> None:
    task = ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, wait_for_completion=False)
    assert task.execute(make_context())["status"] == "queued"
    assert _pool_is_closed(task)


def test_closed_after_deferring(sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(SLOW)
    task = ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, deferrable=True)
    with pytest.raises(TaskDeferred):
        task.execute(make_context())
    assert _pool_is_closed(task)


def test_closed_after_failing(sandbox: SandboxServer) -> None:
    sandbox.state.inject(Fault.status(404, path="/data$"))
    task = GetChartDataOperator(task_id="t", chart_id="ch_revenue")
    with pytest.raises(NotFoundError):
        task.execute(make_context())
    assert _pool_is_closed(task)


def test_the_sensor_closes_its_pool(sandbox: SandboxServer) -> None:
    task = DataSourceSyncedSensor(task_id="t", data_source_id="ds_warehouse", synced_after="2020-01-01T00:00:00Z")
    assert task.execute(make_context())["data_source_id"] == "ds_warehouse"
    assert _pool_is_closed(task)


def test_a_closed_hook_is_rebuilt_when_used_again(sandbox: SandboxServer) -> None:
    task = ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, wait_for_completion=False)
    task.execute(make_context())
    assert task.hook.get_execution(WORKFLOW, task.execute(make_context())["id"])["workflow_id"] == WORKFLOW
