"""Every task closes its hook's HTTP pool when execute or execute_complete ends, however it ends."""

from __future__ import annotations

from typing import Any

import pytest
from airflow.providers.common.compat.sdk import TaskDeferred

from airflow_provider_analytics.operators._common import task_step
from airflow_provider_analytics.operators.charts import GetChartDataOperator
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor
from airflow_provider_analytics.wire.errors import NotFoundError
from tests.support.context import SLOW, make_context
from tests.support.final import raises_final
from tests.support.names import WORKFLOW
from tests.support.sockets import connections_to


def _pool_is_closed(sandbox: SandboxServer) -> bool:
    """The task talked to the sandbox, and holds no connection to it any more (as the OS reports it)."""
    return bool(sandbox.state.requests) and connections_to(sandbox.port) == 0


def test_closed_after_returning(sandbox: SandboxServer) -> None:
    task = ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, wait_for_completion=False)
    assert task.execute(make_context())["status"] == "queued"
    assert _pool_is_closed(sandbox)


def test_closed_after_deferring(sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(SLOW)
    task = ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, deferrable=True)
    with pytest.raises(TaskDeferred):
        task.execute(make_context())
    assert _pool_is_closed(sandbox)


def test_closed_after_failing(sandbox: SandboxServer) -> None:
    sandbox.state.inject(Fault.status(404, path="/data$"))
    task = GetChartDataOperator(task_id="t", chart_id="ch_revenue")
    with raises_final(NotFoundError):
        task.execute(make_context())
    assert _pool_is_closed(sandbox)


def test_the_sensor_closes_its_pool(sandbox: SandboxServer) -> None:
    task = DataSourceSyncedSensor(task_id="t", data_source_id="ds_warehouse", synced_after="2020-01-01T00:00:00Z")
    assert task.execute(make_context())["data_source_id"] == "ds_warehouse"
    assert _pool_is_closed(sandbox)


def test_a_hook_closed_by_a_step_is_rebuilt_when_used_again(sandbox: SandboxServer) -> None:
    task = ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, wait_for_completion=False)
    started = task.execute(make_context())
    assert _pool_is_closed(sandbox)
    with task.hook as hook:  # used outside a task step, so closed here
        assert hook.get_execution(WORKFLOW, started["id"])["workflow_id"] == WORKFLOW
        assert connections_to(sandbox.port) == 1  # a new pool, with its one kept connection
    assert connections_to(sandbox.port) == 0


def _task_classes() -> list[type]:
    """Every operator and sensor class the package defines."""
    import importlib
    import inspect
    import pkgutil

    import airflow_provider_analytics.operators as operators
    import airflow_provider_analytics.sensors as sensors

    classes = []
    for package in (operators, sensors):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            classes += [c for _, c in inspect.getmembers(module, inspect.isclass) if c.__module__ == module.__name__]
    return classes


def test_every_execute_and_execute_complete_is_a_task_step() -> None:
    """The hook is closed only where a step says so: each class's own execute/execute_complete must."""
    step_code = task_step(lambda self: None).__code__  # every task_step wrapper runs this same code

    def is_step(method: Any) -> bool:
        # Airflow's operator metaclass may wrap execute again (functools.wraps): look down the chain.
        while method is not None:
            if getattr(method, "__code__", None) is step_code:
                return True
            method = getattr(method, "__wrapped__", None)
        return False

    undecorated = [
        f"{cls.__name__}.{name}"
        for cls in _task_classes()
        for name in ("execute", "execute_complete")
        if name in cls.__dict__ and not is_step(cls.__dict__[name])
    ]
    assert undecorated == []
