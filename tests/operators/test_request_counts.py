"""Each operator sends only the requests its work needs: counted, in order, from the sandbox's request log.

Three ways a task runs: fire-and-forget (``wait_for_completion=False``), a wait on the worker, and deferred
(``execute``, the trigger, ``execute_complete`` on a fresh operator). Reading finished work a second time,
or pushing its ids twice, would show here as an extra line.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import BaseOperator, TaskDeferred

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.charts import CreateChartOperator
from airflow_provider_analytics.operators.dashboards import CreateDashboardOperator, UpdateDashboardOperator
from airflow_provider_analytics.operators.data_sources import ConnectDataSourceOperator
from airflow_provider_analytics.operators.reports import DownloadReportOperator, GenerateReportOperator
from airflow_provider_analytics.operators.workflows import CreateWorkflowOperator, ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor
from tests.support.context import SLOW, StubTaskInstance, TaskContext, make_context
from tests.support.names import DATA_SOURCE, POLL, WORKFLOW
from tests.support.triggers import execution_path, triggerer_event

# Under SLOW timings every state lasts 600 s: this far on, all work is over.
PAST_THE_END = 1300.0
# Worker waits poll this often; the work is made to finish well inside the first interval.
WORKER_POLL = 1.0


class CountingTaskInstance(StubTaskInstance):
    """A task instance that also remembers every XCom push, to see that ids are pushed once."""

    def __init__(self) -> None:
        super().__init__()
        self.pushes: list[str] = []

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushes.append(key)
        super().xcom_push(key, value)


def counting_context(**extra: Any) -> TaskContext:
    return make_context(ti=CountingTaskInstance(), **extra)


def sent(sandbox: SandboxServer, since: int = 0) -> list[tuple[str, str]]:
    """``(method, path)`` of every request from index ``since`` on."""
    return [(r.method, r.path) for r in sandbox.state.requests[since:]]


@contextmanager
def finishing_after(sandbox: SandboxServer, seconds: float) -> Iterator[None]:
    """Move the sandbox past the end of all work ``seconds`` from now, from another thread.

    A worker wait then sees its work unfinished at the start, finished at its first poll: one GET, always.
    """
    timer = threading.Timer(seconds, sandbox.state.advance, args=(PAST_THE_END,))
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        timer.join()


def defer(operator: Any, context: TaskContext) -> Any:
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute(context)
    return deferred.value.trigger


# --- ExecuteWorkflowOperator ------------------------------------------------------------------------------


def execute_workflow(**kwargs: Any) -> ExecuteWorkflowOperator:
    return ExecuteWorkflowOperator(task_id="task", workflow_id=WORKFLOW, **kwargs)


def only_execution(sandbox: SandboxServer) -> str:
    (execution,) = sandbox.state.executions()
    return str(execution["id"])


def test_execute_workflow_fire_and_forget_sends_one_post(sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(SLOW)
    context = counting_context()
    result = execute_workflow(wait_for_completion=False).execute(context)
    assert result["status"] == "queued"
    assert sent(sandbox) == [("POST", f"/v1/workflows/{WORKFLOW}/execute")]
    assert context["ti"].pushes == ["execution_id", "_link_ExecutionLink"]


def test_execute_workflow_on_the_worker_reads_the_finished_execution_once(sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(SLOW)
    context = counting_context()
    with finishing_after(sandbox, WORKER_POLL / 3):
        result = execute_workflow(poll_interval=WORKER_POLL).execute(context)
    assert result["status"] == "succeeded"
    path = execution_path(WORKFLOW, only_execution(sandbox))
    assert sent(sandbox) == [("POST", f"/v1/workflows/{WORKFLOW}/execute"), ("GET", path)]
    assert context["ti"].pushes == ["execution_id", "_link_ExecutionLink"]


def test_execute_workflow_deferred_sends_a_post_then_only_the_triggers_gets(sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(SLOW)
    context = counting_context()
    trigger = defer(execute_workflow(deferrable=True, poll_interval=POLL), context)
    path = execution_path(WORKFLOW, only_execution(sandbox))
    assert sent(sandbox) == [("POST", f"/v1/workflows/{WORKFLOW}/execute")]
    assert context["ti"].pushes == ["execution_id", "_link_ExecutionLink"]

    sandbox.state.advance(PAST_THE_END)
    event = triggerer_event(trigger)
    assert sent(sandbox, 1) == [("GET", path)]

    result = execute_workflow().execute_complete(context, event)
    assert result["status"] == "succeeded"
    assert sent(sandbox, 2) == []


# --- GenerateReportOperator -------------------------------------------------------------------------------


def generate_report(**kwargs: Any) -> GenerateReportOperator:
    return GenerateReportOperator(task_id="task", dashboard_ids=["db_sales"], format="csv", **kwargs)


def only_report(sandbox: SandboxServer) -> str:
    (report,) = sandbox.state.reports()
    return str(report["id"])


def test_generate_report_fire_and_forget_sends_one_post(sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(SLOW)
    context = counting_context()
    result = generate_report(wait_for_completion=False).execute(context)
    assert result["status"] == "pending"
    assert sent(sandbox) == [("POST", "/v1/reports")]
    assert context["ti"].pushes == ["report_id", "_link_ReportLink"]


def test_generate_report_on_the_worker_reads_the_ready_report_once(sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(SLOW)
    context = counting_context()
    with finishing_after(sandbox, WORKER_POLL / 3):
        result = generate_report(poll_interval=WORKER_POLL).execute(context)
    assert result["status"] == "ready"
    assert sent(sandbox) == [("POST", "/v1/reports"), ("GET", f"/v1/reports/{only_report(sandbox)}")]
    assert context["ti"].pushes == ["report_id", "_link_ReportLink"]


def test_generate_report_deferred_sends_a_post_then_only_the_triggers_gets(sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(SLOW)
    context = counting_context()
    trigger = defer(generate_report(deferrable=True, poll_interval=POLL), context)
    assert sent(sandbox) == [("POST", "/v1/reports")]

    sandbox.state.advance(PAST_THE_END)
    event = triggerer_event(trigger)
    assert sent(sandbox, 1) == [("GET", f"/v1/reports/{only_report(sandbox)}")]

    assert generate_report().execute_complete(context, event)["status"] == "ready"
    assert sent(sandbox, 2) == []


# --- DownloadReportOperator -------------------------------------------------------------------------------


def pending_report(sandbox: SandboxServer, hook: AnalyticsHook) -> tuple[str, int]:
    """A report still pending (SLOW timings), and where the request log stands after making it."""
    sandbox.state.set_timings(SLOW)
    report_id = str(hook.generate_report(["db_sales"], "csv")["id"])
    return report_id, len(sandbox.state.requests)


def test_download_report_on_the_worker_reads_the_report_then_its_file(
    sandbox: SandboxServer, hook: AnalyticsHook, tmp_path: Any
) -> None:
    report_id, since = pending_report(sandbox, hook)
    op = DownloadReportOperator(
        task_id="task", report_id=report_id, destination=str(tmp_path / "r.csv"), poll_interval=WORKER_POLL
    )
    with finishing_after(sandbox, WORKER_POLL / 3):
        op.execute(counting_context())
    report = f"/v1/reports/{report_id}"
    assert sent(sandbox, since) == [("GET", report), ("GET", report), ("GET", f"{report}/download")]


def test_download_report_deferred_reads_the_report_once_per_side_then_its_file(
    sandbox: SandboxServer, hook: AnalyticsHook, tmp_path: Any
) -> None:
    report_id, since = pending_report(sandbox, hook)

    def download() -> DownloadReportOperator:
        return DownloadReportOperator(
            task_id="task",
            report_id=report_id,
            destination=str(tmp_path / "r.csv"),
            deferrable=True,
            poll_interval=POLL,
        )

    context = counting_context()
    trigger = defer(download(), context)
    report = f"/v1/reports/{report_id}"
    assert sent(sandbox, since) == [("GET", report)]

    sandbox.state.advance(PAST_THE_END)
    event = triggerer_event(trigger)
    assert sent(sandbox, since + 1) == [("GET", report)]

    download().execute_complete(context, event)
    assert sent(sandbox, since + 2) == [("GET", f"{report}/download")]


# --- DataSourceSyncedSensor -------------------------------------------------------------------------------


def stale_sync(sandbox: SandboxServer) -> Any:
    """A sync started now that finishes only when the clock moves past the end; the time it must beat."""
    sandbox.state.set_timings(SLOW)
    threshold = sandbox.state.now()
    sandbox.state.start_sync(DATA_SOURCE)
    return threshold


def test_sensor_on_the_worker_reads_the_status_once_per_poke(sandbox: SandboxServer) -> None:
    threshold = stale_sync(sandbox)
    sensor = DataSourceSyncedSensor(
        task_id="task", data_source_id=DATA_SOURCE, synced_after=threshold, poke_interval=WORKER_POLL, timeout=60
    )
    with finishing_after(sandbox, WORKER_POLL / 3):
        result = sensor.execute(counting_context())
    assert result["status"] == "synced"
    path = f"/v1/data-sources/{DATA_SOURCE}/sync"
    assert sent(sandbox) == [("GET", path), ("GET", path)]


def test_sensor_deferred_reads_the_status_once_per_side(sandbox: SandboxServer) -> None:
    threshold = stale_sync(sandbox)

    def sensor() -> DataSourceSyncedSensor:
        return DataSourceSyncedSensor(
            task_id="task", data_source_id=DATA_SOURCE, synced_after=threshold, deferrable=True, poke_interval=POLL
        )

    context = counting_context()
    trigger = defer(sensor(), context)
    path = f"/v1/data-sources/{DATA_SOURCE}/sync"
    assert sent(sandbox) == [("GET", path)]

    sandbox.state.advance(PAST_THE_END)
    event = triggerer_event(trigger)
    assert sent(sandbox, 1) == [("GET", path)]

    assert sensor().execute_complete(context, event)["status"] == "synced"
    assert sent(sandbox, 2) == []


# --- the create and update operators ------------------------------------------------------------------------


# What each create or update operator sends: the operator made fresh, and its (method, path) requests.
CREATORS: dict[str, tuple[Callable[[], BaseOperator], list[tuple[str, str]]]] = {
    "workflow": (
        lambda: CreateWorkflowOperator(task_id="task", name="counted", configuration={"steps": []}),
        [("POST", "/v1/workflows")],
    ),
    "chart": (
        lambda: CreateChartOperator(
            task_id="task", name="counted", type="bar", data_source_id=DATA_SOURCE, query="select 1"
        ),
        [("POST", "/v1/charts")],
    ),
    "data_source": (
        lambda: ConnectDataSourceOperator(
            task_id="task", name="counted", type="postgres", connection={"host": "db", "database": "d", "user": "u"}
        ),
        [("POST", "/v1/data-sources")],
    ),
    "dashboard": (
        lambda: CreateDashboardOperator(task_id="task", name="counted"),
        [("POST", "/v1/dashboards")],
    ),
    "dashboard_update": (
        lambda: UpdateDashboardOperator(task_id="task", dashboard_id="db_sales", name="counted"),
        [("PUT", "/v1/dashboards/db_sales")],
    ),
}


@pytest.mark.parametrize("what", sorted(CREATORS))
def test_create_and_update_operators_send_one_request(sandbox: SandboxServer, what: str) -> None:
    make, expected = CREATORS[what]
    make().execute(counting_context())
    assert sent(sandbox) == expected
