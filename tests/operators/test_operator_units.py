"""Operators and the sensor at unit level, without an Airflow database.

Connections come from ``AIRFLOW_CONN_ANALYTICS_DEFAULT`` (the ``sandbox`` fixture), ``execute`` gets a
minimal context with a stub task instance, deferral is caught as ``TaskDeferred``, triggers are drained
with ``asyncio.run`` and ``execute_complete`` is called directly with the real event, on a fresh operator
(nothing in memory survives between ``execute`` and ``execute_complete`` in a real deployment).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import pkgutil
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import (
    AirflowException,
    AirflowFailException,
    AirflowSensorTimeout,
    AirflowSkipException,
    TaskDeferred,
)

import airflow_provider_analytics.operators as operators_package
import airflow_provider_analytics.sensors as sensors_package
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.charts import CreateChartOperator, GetChartDataOperator
from airflow_provider_analytics.operators.dashboards import CreateDashboardOperator, UpdateDashboardOperator
from airflow_provider_analytics.operators.data_sources import ConnectDataSourceOperator
from airflow_provider_analytics.operators.jobs import RemoteJobFailed, RemoteJobTimeout
from airflow_provider_analytics.operators.reports import DownloadReportOperator, GenerateReportOperator
from airflow_provider_analytics.operators.workflows import CreateWorkflowOperator, ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.config import Timings
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor
from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger
from airflow_provider_analytics.triggers.data_sources import DataSourceSyncTrigger
from airflow_provider_analytics.triggers.executions import ExecutionTrigger
from airflow_provider_analytics.triggers.reports import ReportTrigger
from airflow_provider_analytics.triggers.wait_events import UnexpectedEventError
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.support.context import SLOW, StubTaskStateStore, make_context

CONN_ENV = "AIRFLOW_CONN_ANALYTICS_DEFAULT"
WORKFLOW = "wf_nightly_enrichment"
DATA_SOURCE = "ds_warehouse"
POLL = 0.1
INSTANT = Timings(
    execution_queued=0,
    execution_running=0,
    sync_pending=0,
    sync_running=0,
    report_pending=0,
    report_generating=0,
)


def drain(trigger: AnalyticsPollTrigger) -> list[dict[str, Any]]:
    """Rebuild the trigger from its serialized form (as the triggerer does), run it, return event payloads."""
    classpath, kwargs = trigger.serialize()
    module_name, _, class_name = classpath.rpartition(".")
    rebuilt = getattr(importlib.import_module(module_name), class_name)(**json.loads(json.dumps(kwargs)))

    async def collect() -> list[dict[str, Any]]:
        return [event.payload async for event in rebuilt.run()]

    return asyncio.run(collect())


def only_event(trigger: AnalyticsPollTrigger) -> dict[str, Any]:
    events = drain(trigger)
    assert len(events) == 1, events
    return events[0]


def set_connection(monkeypatch: pytest.MonkeyPatch, sandbox: SandboxServer, token: str | None = None) -> None:
    monkeypatch.setenv(CONN_ENV, sandbox.connection_json(token=token))


@pytest.fixture
def hook(sandbox: SandboxServer) -> Iterator[AnalyticsHook]:
    made = AnalyticsHook()
    yield made
    made.close()


def execution_view(sandbox: SandboxServer, execution_id: str) -> dict[str, Any]:
    return next(item for item in sandbox.state.executions() if item["id"] == execution_id)


def requests_summary(sandbox: SandboxServer) -> list[tuple[str, str, int]]:
    return [(r.method, r.path, r.status) for r in sandbox.state.requests]


# Template rendering -----------------------------------------------------------------------------------

RENDER_CONTEXT: dict[str, Any] = {
    "ds": "2026-11-20",
    "run_id": "manual__2026-11-20",
    "data_interval_end": datetime(2026, 11, 20, tzinfo=timezone.utc),
    "params": {
        "env": "prod",
        "workflow": WORKFLOW,
        "dashboard": "db_sales",
        "chart": "ch_revenue",
        "data_source": DATA_SOURCE,
        "report": "rp_abc123",
        "format": "csv",
        "version": 3,
    },
}

DASHBOARD_FIELDS: dict[str, tuple[Any, Any]] = {
    "name": ("Sales {{ ds }}", "Sales 2026-11-20"),
    "description": ("for {{ params.env }}", "for prod"),
    "tags": (["{{ params.env }}", "daily"], ["prod", "daily"]),
    "layout": ([{"chart_id": "{{ params.chart }}", "x": 0, "w": 6}], [{"chart_id": "ch_revenue", "x": 0, "w": 6}]),
}

# class -> (constructor arguments that are not templated, {template field: (Jinja input, rendered value)})
RENDER_CASES: dict[type[BaseOperator], tuple[dict[str, Any], dict[str, tuple[Any, Any]]]] = {
    ExecuteWorkflowOperator: (
        {},
        {
            "workflow_id": ("{{ params.workflow }}", WORKFLOW),
            "inputs": (
                {"day": "{{ ds }}", "envs": ["{{ params.env }}"], "nested": {"run": "{{ run_id }}"}, "n": 5},
                {"day": "2026-11-20", "envs": ["prod"], "nested": {"run": "manual__2026-11-20"}, "n": 5},
            ),
        },
    ),
    CreateWorkflowOperator: (
        {},
        {
            "name": ("etl-{{ params.env }}", "etl-prod"),
            "configuration": ({"steps": [{"name": "load-{{ ds }}"}]}, {"steps": [{"name": "load-2026-11-20"}]}),
            "description": ("built {{ ds }}", "built 2026-11-20"),
        },
    ),
    GenerateReportOperator: (
        {},
        {
            "dashboard_ids": (["{{ params.dashboard }}", "db_product"], ["db_sales", "db_product"]),
            "format": ("{{ params.format }}", "csv"),
            "name": ("sales-{{ ds }}", "sales-2026-11-20"),
            "parameters": ({"day": "{{ ds }}"}, {"day": "2026-11-20"}),
        },
    ),
    DownloadReportOperator: (
        {},
        {
            "report_id": ("{{ params.report }}", "rp_abc123"),
            "destination": ("/data/{{ params.env }}/{{ ds }}.pdf", "/data/prod/2026-11-20.pdf"),
        },
    ),
    CreateChartOperator: (
        {},
        {
            "name": ("Revenue {{ ds }}", "Revenue 2026-11-20"),
            "type": ("{{ 'line' }}", "line"),
            "data_source_id": ("{{ params.data_source }}", DATA_SOURCE),
            "query": (
                "SELECT day, value FROM t WHERE day = '{{ ds }}'",
                "SELECT day, value FROM t WHERE day = '2026-11-20'",
            ),
            "options": ({"color": "{{ params.env }}"}, {"color": "prod"}),
        },
    ),
    GetChartDataOperator: (
        {},
        {
            "chart_id": ("{{ params.chart }}", "ch_revenue"),
            "destination": ("/data/{{ ds }}.csv", "/data/2026-11-20.csv"),
        },
    ),
    ConnectDataSourceOperator: (
        {},
        {
            "name": ("warehouse-{{ params.env }}", "warehouse-prod"),
            "type": ("{{ 'postgres' }}", "postgres"),
            "connection": (
                {
                    "host": "{{ params.env }}.db.internal",
                    "database": "dw",
                    "user": "svc",
                    "password": "{{ params.env }}-pw",
                },
                {"host": "prod.db.internal", "database": "dw", "user": "svc", "password": "prod-pw"},
            ),
        },
    ),
    CreateDashboardOperator: ({}, DASHBOARD_FIELDS),
    UpdateDashboardOperator: (
        {},
        {
            "dashboard_id": ("{{ params.dashboard }}", "db_sales"),
            "if_match": ("{{ params.version }}", "3"),
            **DASHBOARD_FIELDS,
        },
    ),
    DataSourceSyncedSensor: (
        {},
        {
            "data_source_id": ("{{ params.data_source }}", DATA_SOURCE),
            "synced_after": ("{{ data_interval_end }}", "2026-11-20 00:00:00+00:00"),
        },
    ),
}


def provider_operator_classes() -> set[type[BaseOperator]]:
    """Every concrete operator and sensor the provider ships (abstract and private bases excluded)."""
    found: set[type[BaseOperator]] = set()
    for package in (operators_package, sensors_package):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            for name, cls in inspect.getmembers(module, inspect.isclass):
                if (
                    issubclass(cls, BaseOperator)
                    and cls.__module__ == module.__name__
                    and not name.startswith("_")
                    and not inspect.isabstract(cls)
                    and cls.execute is not BaseOperator.execute
                ):
                    found.add(cls)
    return found


def build(cls: type[BaseOperator], **overrides: Any) -> Any:
    fixed, fields = RENDER_CASES[cls]
    kwargs = {**fixed, **{name: template for name, (template, _) in fields.items()}, **overrides}
    return cls(task_id=f"render_{cls.__name__}", **kwargs)


def test_every_operator_and_sensor_has_a_render_case() -> None:
    assert provider_operator_classes() == set(RENDER_CASES)


@pytest.mark.parametrize("cls", list(RENDER_CASES), ids=lambda cls: cls.__name__)
def test_template_fields_name_attributes_and_all_render(cls: type[BaseOperator]) -> None:
    op = build(cls)
    _, fields = RENDER_CASES[cls]
    for name in op.template_fields:
        assert hasattr(op, name), f"{cls.__name__}.template_fields names {name!r}, which is not an attribute"
    # Every template field is covered by the case, so a new field must get a rendering check too.
    assert set(op.template_fields) == set(fields)
    assert set(getattr(cls, "template_fields_renderers", {})) <= set(op.template_fields)

    op.render_template_fields(RENDER_CONTEXT)

    for name, (_, rendered) in fields.items():
        assert getattr(op, name) == rendered, name
    assert "{{" not in json.dumps({name: getattr(op, name) for name in op.template_fields}, default=str)


def test_rendered_sensor_time_is_a_usable_threshold() -> None:
    sensor = build(DataSourceSyncedSensor)
    sensor.render_template_fields(RENDER_CONTEXT)
    assert sensor.threshold({}) == datetime(2026, 11, 20, tzinfo=timezone.utc)


def test_rendered_if_match_reaches_the_platform_as_the_version(sandbox: SandboxServer) -> None:
    op = build(UpdateDashboardOperator, layout=[{"chart_id": "ch_revenue"}])
    op.render_template_fields({**RENDER_CONTEXT, "params": {**RENDER_CONTEXT["params"], "version": 1}})
    context = make_context()
    dashboard = op.execute(context)
    (put,) = [r for r in sandbox.state.requests if r.method == "PUT"]
    assert put.path == "/v1/dashboards/db_sales"
    assert put.headers["if-match"] == '"1"'
    assert put.json["tags"] == ["prod", "daily"]
    assert dashboard["version"] == 2
    assert context["ti"].xcom["dashboard_id"] == "db_sales"


# Bad input fails before any request -------------------------------------------------------------------


def existing_file(tmp_path: Path, name: str) -> str:
    path = tmp_path / name
    path.write_bytes(b"already here")
    return str(path)


BAD_INPUT: list[Any] = [
    pytest.param(
        lambda tmp: ExecuteWorkflowOperator(task_id="t", workflow_id="wf nightly!"),
        r"workflow_id must be 1-64 characters of letters, digits, '_' or '-', got 'wf nightly!'",
        id="malformed-workflow-id",
    ),
    pytest.param(
        lambda tmp: ExecuteWorkflowOperator(task_id="t", workflow_id="", deferrable=True),
        r"workflow_id must be 1-64 characters",
        id="empty-workflow-id-deferrable",
    ),
    pytest.param(
        lambda tmp: ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, inputs=["day", "2026-11-20"]),
        r"inputs must be a mapping \(dict\), got list",
        id="list-inputs",
    ),
    pytest.param(
        lambda tmp: ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, inputs='{"day": "2026-11-20"}'),
        r"inputs must be a mapping \(dict\), got str",
        id="json-string-inputs",
    ),
    pytest.param(
        lambda tmp: GenerateReportOperator(task_id="t", dashboard_ids=[]),
        r"dashboard_ids must be a non-empty list of dashboard ids, got \[\]",
        id="empty-dashboard-ids",
    ),
    pytest.param(
        lambda tmp: GenerateReportOperator(task_id="t", dashboard_ids="db_sales"),
        r"dashboard_ids must be a non-empty list of dashboard ids, got 'db_sales'",
        id="dashboard-ids-string",
    ),
    pytest.param(
        lambda tmp: GenerateReportOperator(task_id="t", dashboard_ids=["db_sales", "db/../x"]),
        r"each dashboard id must be 1-64 characters",
        id="malformed-dashboard-id",
    ),
    pytest.param(
        lambda tmp: GenerateReportOperator(task_id="t", dashboard_ids=["db_sales"], format="docx"),
        r"format must be one of .*pdf.*; got 'docx'",
        id="unknown-format",
    ),
    pytest.param(
        lambda tmp: GenerateReportOperator(task_id="t", dashboard_ids=["db_sales"], parameters=["rows", 5]),
        r"parameters must be a mapping",
        id="report-parameters-not-mapping",
    ),
    pytest.param(
        lambda tmp: DownloadReportOperator(task_id="t", report_id="rp_abc123", destination=existing_file(tmp, "r.pdf")),
        r"already exists: pass overwrite=True to replace it, or pick another path",
        id="download-destination-exists",
    ),
    pytest.param(
        lambda tmp: DownloadReportOperator(task_id="t", report_id="rp abc", destination=str(tmp / "r.pdf")),
        r"report_id must be 1-64 characters",
        id="download-malformed-report-id",
    ),
    pytest.param(
        lambda tmp: CreateChartOperator(
            task_id="t", name="Revenue", type="line", data_source_id="ds warehouse", query="SELECT 1"
        ),
        r"data_source_id must be 1-64 characters",
        id="chart-malformed-data-source",
    ),
    pytest.param(
        lambda tmp: CreateChartOperator(
            task_id="t", name="Revenue", type="donut", data_source_id=DATA_SOURCE, query="x"
        ),
        r"type must be one of .*line.*; got 'donut'",
        id="chart-unknown-type",
    ),
    pytest.param(
        lambda tmp: GetChartDataOperator(task_id="t", chart_id="ch_revenue", file_format="parquet"),
        r"file_format must be one of csv, jsonl, got 'parquet'",
        id="chart-data-unknown-file-format",
    ),
    pytest.param(
        lambda tmp: GetChartDataOperator(task_id="t", chart_id="ch_revenue", page_size=0),
        r"page_size must be an integer from 1 to 100, got 0",
        id="chart-data-page-size",
    ),
    pytest.param(
        lambda tmp: GetChartDataOperator(task_id="t", chart_id="ch revenue"),
        r"chart_id must be 1-64 characters",
        id="chart-data-malformed-id",
    ),
    pytest.param(
        lambda tmp: GetChartDataOperator(task_id="t", chart_id="ch_revenue", destination=f"{tmp}/"),
        r"destination must name a file, got the folder",
        id="chart-data-folder-destination",
    ),
    pytest.param(
        lambda tmp: GetChartDataOperator(task_id="t", chart_id="ch_revenue", destination=existing_file(tmp, "c.csv")),
        r"already exists: pass overwrite=True",
        id="chart-data-destination-exists",
    ),
    pytest.param(
        lambda tmp: ConnectDataSourceOperator(task_id="t", name="wh", type="postgres", connection="host=db"),
        r"connection must be a mapping \(dict\), got str",
        id="data-source-connection-not-mapping",
    ),
    pytest.param(
        lambda tmp: CreateWorkflowOperator(task_id="t", name="etl", configuration=["step"]),
        r"configuration must be a mapping \(dict\), got list",
        id="workflow-configuration-not-mapping",
    ),
    pytest.param(
        lambda tmp: CreateDashboardOperator(task_id="t", name="Sales", layout=[{"x": 0}]),
        r"layout chart_id must be 1-64 characters",
        id="dashboard-layout-without-chart",
    ),
    pytest.param(
        lambda tmp: CreateDashboardOperator(task_id="t", name="Sales", tags="sales,daily", update_existing=True),
        r"tags must be a list of strings, got 'sales,daily'",
        id="dashboard-tags-string",
    ),
    pytest.param(
        lambda tmp: UpdateDashboardOperator(task_id="t", dashboard_id="db sales", name="Sales"),
        r"dashboard_id must be 1-64 characters",
        id="update-dashboard-malformed-id",
    ),
    pytest.param(
        lambda tmp: UpdateDashboardOperator(task_id="t", dashboard_id="db_sales", name="Sales", if_match="latest"),
        r"if_match must be the dashboard's version \(a positive int\), got 'latest'",
        id="update-dashboard-if-match-text",
    ),
    pytest.param(
        lambda tmp: DataSourceSyncedSensor(
            task_id="t", data_source_id=DATA_SOURCE, synced_after=datetime(2026, 11, 21, 10, 0)
        ),
        r"synced_after must be a timezone-aware datetime or an ISO 8601 string with an offset \(e.g\. "
        r"2026-11-21T10:00:00Z\), got datetime\.datetime\(2026, 11, 21, 10, 0\)",
        id="sensor-naive-datetime",
    ),
    pytest.param(
        lambda tmp: DataSourceSyncedSensor(
            task_id="t", data_source_id=DATA_SOURCE, synced_after="2026-11-21T10:00:00", deferrable=True
        ),
        r"synced_after must be a timezone-aware datetime .*got '2026-11-21T10:00:00'",
        id="sensor-naive-string-deferrable",
    ),
    pytest.param(
        lambda tmp: DataSourceSyncedSensor(task_id="t", data_source_id=DATA_SOURCE, synced_after="after lunch"),
        r"synced_after must be a timezone-aware datetime .*got 'after lunch'",
        id="sensor-garbage-time",
    ),
    pytest.param(
        lambda tmp: DataSourceSyncedSensor(task_id="t", data_source_id=DATA_SOURCE),
        r"synced_after must be a timezone-aware datetime .*got None",
        id="sensor-no-time-anywhere",
    ),
    pytest.param(
        lambda tmp: DataSourceSyncedSensor(
            task_id="t", data_source_id="ds warehouse", synced_after="2026-11-21T10:00Z"
        ),
        r"data_source_id must be 1-64 characters",
        id="sensor-malformed-data-source",
    ),
    pytest.param(
        lambda tmp: DataSourceSyncedSensor(
            task_id="t", data_source_id=DATA_SOURCE, synced_after="2026-11-21T10:00Z", deferrable=True, poke_interval=0
        ),
        r"poke_interval must be a positive number of seconds or a timedelta, got 0.0",
        id="sensor-deferrable-zero-poke-interval",
    ),
    pytest.param(
        lambda tmp: DataSourceSyncedSensor(
            task_id="t", data_source_id=DATA_SOURCE, synced_after="2026-11-21T10:00Z", poke_interval=0.01
        ),
        r"poke_interval must be at least 0.1 s, got 0.01",
        id="sensor-tiny-poke-interval",
    ),
]


@pytest.mark.parametrize(("factory", "message"), BAD_INPUT)
def test_bad_input_fails_before_any_request(
    sandbox: SandboxServer, tmp_path: Path, factory: Callable[[Path], Any], message: str
) -> None:
    op = factory(tmp_path)
    context = make_context()
    with pytest.raises(AnalyticsInputError, match=message):
        op.execute(context)
    assert sandbox.state.requests == []
    assert context["ti"].xcom == {}
    assert context["task_state_store"].values == {}


def test_existing_destination_is_kept_untouched(sandbox: SandboxServer, tmp_path: Path) -> None:
    target = existing_file(tmp_path, "report.pdf")
    with pytest.raises(AnalyticsInputError):
        DownloadReportOperator(task_id="t", report_id="rp_abc123", destination=target).execute(make_context())
    assert Path(target).read_bytes() == b"already here"


DURATION_OWNERS: list[Any] = [
    pytest.param(lambda **kw: ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, **kw), id="execute-workflow"),
    pytest.param(
        lambda **kw: GenerateReportOperator(task_id="t", dashboard_ids=["db_sales"], **kw), id="generate-report"
    ),
    pytest.param(
        lambda **kw: DownloadReportOperator(task_id="t", report_id="rp_abc123", destination="/tmp/x.pdf", **kw),
        id="download-report",
    ),
]


@pytest.mark.parametrize("make", DURATION_OWNERS)
@pytest.mark.parametrize("value", [0, -1, "10", True, None, timedelta(0), timedelta(seconds=-5)], ids=repr)
def test_bad_poll_interval_fails_at_construction(make: Callable[..., Any], value: Any) -> None:
    with pytest.raises(AnalyticsInputError, match="poll_interval"):
        make(poll_interval=value)


@pytest.mark.parametrize("make", DURATION_OWNERS)
@pytest.mark.parametrize("value", [0, -30, "1h", False, timedelta(seconds=-1)], ids=repr)
def test_bad_timeout_fails_at_construction(make: Callable[..., Any], value: Any) -> None:
    with pytest.raises(AnalyticsInputError, match="timeout must be a positive number of seconds or a timedelta"):
        make(timeout=value)


@pytest.mark.parametrize("make", DURATION_OWNERS)
def test_durations_accept_seconds_and_timedeltas(make: Callable[..., Any]) -> None:
    op = make(poll_interval=timedelta(seconds=30), timeout=timedelta(minutes=2))
    assert (op.poll_interval, op.timeout) == (30.0, 120.0)
    op = make(poll_interval=2, timeout=7.5)
    assert (op.poll_interval, op.timeout) == (2.0, 7.5)


@pytest.mark.parametrize("make", DURATION_OWNERS)
@pytest.mark.parametrize("parameter", ["poll_interval", "timeout"])
def test_nan_durations_fail_at_construction(make: Callable[..., Any], parameter: str) -> None:
    with pytest.raises(AnalyticsInputError, match=parameter):
        make(**{parameter: float("nan")})


@pytest.mark.parametrize(("parameter", "value"), [("poke_interval", -1), ("timeout", -1), ("poke_interval", "soon")])
def test_sensor_bad_intervals_fail_at_construction(parameter: str, value: Any) -> None:
    with pytest.raises(ValueError, match=parameter):
        DataSourceSyncedSensor(task_id="t", data_source_id=DATA_SOURCE, **{parameter: value})


def test_nothing_touches_the_network_at_construction(sandbox: SandboxServer) -> None:
    for cls in RENDER_CASES:
        build(cls)
    assert sandbox.state.requests == []


# Deferral: ExecuteWorkflowOperator --------------------------------------------------------------------


def defer_execution(sandbox: SandboxServer, **kwargs: Any) -> tuple[TaskDeferred, dict[str, Any], dict[str, Any]]:
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
    assert context["task_state_store"].values == {
        "analytics_execution": {"workflow_id": WORKFLOW, "execution_id": execution["id"]}
    }


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
    from airflow_provider_analytics.operators.waiting import EXECUTION_TIMEOUT_MARGIN

    sandbox.state.set_timings(SLOW)
    op = ExecuteWorkflowOperator(
        task_id="run", workflow_id=WORKFLOW, deferrable=True, timeout=3600, execution_timeout=timedelta(minutes=10)
    )
    context = make_context()
    context["ti"].start_date = datetime.now(timezone.utc) - timedelta(minutes=1)
    with pytest.raises(TaskDeferred) as deferred:
        op.execute(context)
    expected = context["ti"].start_date.timestamp() + 600 - EXECUTION_TIMEOUT_MARGIN
    assert deferred.value.trigger.deadline == pytest.approx(expected)


def test_deferred_execution_resumes_with_the_final_execution(sandbox: SandboxServer) -> None:
    deferred, context, execution = defer_execution(sandbox)
    sandbox.state.advance(1300)

    event = only_event(deferred.trigger)
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
        f"execution {execution['id']} of workflow wf_legacy_export ended failed: {error['type']}: {error['message']}"
    )


def test_execute_reattaches_to_the_stored_execution_instead_of_starting_another(sandbox: SandboxServer) -> None:
    deferred, context, _execution = defer_execution(sandbox)
    retry = ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, deferrable=True, poll_interval=POLL)
    retry_context = {**make_context(), "task_state_store": context["task_state_store"]}
    with pytest.raises(TaskDeferred) as again:
        retry.execute(retry_context)
    assert again.value.trigger.target == deferred.trigger.target
    assert len(sandbox.state.executions()) == 1
    assert [r.method for r in sandbox.state.requests].count("POST") == 1


STARTED = {"workflow_id": WORKFLOW, "execution_id": "ex_started0001"}


def event_for(target: dict[str, Any], status: str = "success", kind: str = "execution", **extra: Any) -> dict[str, Any]:
    return {
        "status": status,
        "kind": kind,
        "target": target,
        "resource": {"status": "succeeded"},
        "message": "m",
        **extra,
    }


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
    event = only_event(deferred.trigger)
    assert event["status"] == "failure"

    with pytest.raises(RemoteJobFailed) as failed:
        ExecuteWorkflowOperator(task_id="run", workflow_id=workflow_id).execute_complete(context, event)

    platform_error = execution_view(sandbox, execution["id"])["error"]
    if error is not None:
        assert platform_error == {"type": "step_failed", "message": error}
    assert str(failed.value) == (
        f"execution {execution['id']} of workflow {workflow_id} ended failed: "
        f"{platform_error['type']}: {platform_error['message']}"
    )


def test_execute_complete_raises_on_an_error_event(sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    deferred, context, execution = defer_execution(sandbox)
    set_connection(monkeypatch, sandbox, token="revoked-token")
    event = only_event(deferred.trigger)
    assert event["status"] == "error"

    with pytest.raises(RemoteJobFailed, match="401") as failed:
        ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW).execute_complete(context, event)
    assert execution["id"] in str(failed.value)
    assert "revoked-token" not in str(failed.value)


def test_execute_complete_cancels_the_execution_on_timeout(sandbox: SandboxServer) -> None:
    deferred, context, execution = defer_execution(sandbox, timeout=0.2)
    event = only_event(deferred.trigger)
    assert (event["status"], event["resource"]["status"]) == ("timeout", "queued")

    with pytest.raises(RemoteJobTimeout, match="it was cancelled") as timed_out:
        ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, timeout=0.2).execute_complete(context, event)

    assert execution["id"] in str(timed_out.value)
    cancel_path = f"/v1/workflows/{WORKFLOW}/executions/{execution['id']}/cancel"
    assert [(m, s) for m, p, s in requests_summary(sandbox) if p == cancel_path] == [("POST", 202)]
    assert execution_view(sandbox, execution["id"])["status"] == "cancelled"


def test_execute_complete_on_timeout_without_cancel_on_kill_leaves_it_running(sandbox: SandboxServer) -> None:
    deferred, context, execution = defer_execution(sandbox, timeout=0.2, cancel_on_kill=False)
    event = only_event(deferred.trigger)
    with pytest.raises(RemoteJobTimeout, match="it was NOT cancelled"):
        ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, cancel_on_kill=False).execute_complete(
            context, event
        )
    assert not [p for _, p, _ in requests_summary(sandbox) if p.endswith("/cancel")]
    assert execution_view(sandbox, execution["id"])["status"] == "queued"


# Deferral: reports ------------------------------------------------------------------------------------


def test_generate_report_defers_then_resumes_with_the_ready_report(sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(SLOW)
    op = GenerateReportOperator(
        task_id="report", dashboard_ids=["db_sales"], format="csv", deferrable=True, poll_interval=POLL
    )
    context = make_context()
    with pytest.raises(TaskDeferred) as deferred:
        op.execute(context)
    (report,) = sandbox.state.reports()
    trigger = deferred.value.trigger
    assert isinstance(trigger, ReportTrigger)
    assert trigger.target == {"report_id": report["id"]}
    assert context["ti"].xcom["report_id"] == report["id"]
    assert context["task_state_store"].values == {"analytics_report": report["id"]}

    sandbox.state.set_timings(Timings.fast())
    event = only_event(trigger)
    result = GenerateReportOperator(task_id="report", dashboard_ids=["db_sales"]).execute_complete(context, event)
    assert result["status"] == "ready"
    assert result["id"] == report["id"]


def test_generate_report_complete_rejects_an_execution_event(sandbox: SandboxServer) -> None:
    op = GenerateReportOperator(task_id="report", dashboard_ids=["db_sales"])
    with pytest.raises(AirflowException, match="unexpected trigger event"):
        op.execute_complete(make_context(), event_for(STARTED))


def test_download_report_defers_for_a_pending_report_then_downloads(
    sandbox: SandboxServer, hook: AnalyticsHook, tmp_path: Path
) -> None:
    sandbox.state.set_timings(SLOW)
    report = hook.generate_report(["db_sales"], "csv")
    target = tmp_path / "sales.csv"
    op = DownloadReportOperator(
        task_id="download",
        report_id=report["id"],
        destination=str(target),
        deferrable=True,
        poll_interval=POLL,
        timeout=60,
    )
    context = make_context()
    with pytest.raises(TaskDeferred) as deferred:
        op.execute(context)
    trigger = deferred.value.trigger
    assert isinstance(trigger, ReportTrigger)
    assert trigger.target == {"report_id": report["id"]}
    assert trigger.deadline is not None
    assert trigger.deadline <= time.time() + 60
    assert not target.exists()

    sandbox.state.set_timings(Timings.fast())
    event = only_event(trigger)
    uri = DownloadReportOperator(task_id="download", report_id=report["id"], destination=str(target)).execute_complete(
        context, event
    )
    assert uri == str(target)
    assert target.stat().st_size > 0
    assert context["ti"].xcom["download"]["uri"] == str(target)


@pytest.mark.parametrize(
    ("event", "error"),
    [
        pytest.param(
            {"status": "success", "kind": "report", "target": {"report_id": "rp_other"}},
            UnexpectedEventError,
            id="other-report",
        ),
        pytest.param(
            {"status": "success", "kind": "execution", "target": {"report_id": "rp_abc123"}},
            UnexpectedEventError,
            id="wrong-kind",
        ),
        pytest.param("success", UnexpectedEventError, id="not-a-dict"),
        pytest.param(
            {
                "status": "timeout",
                "kind": "report",
                "target": {"report_id": "rp_abc123"},
                "resource": None,
                "message": "m",
            },
            RemoteJobTimeout,
            id="timeout",
        ),
        pytest.param(
            {
                "status": "failure",
                "kind": "report",
                "target": {"report_id": "rp_abc123"},
                "resource": {
                    "status": "failed",
                    "error": {"type": "render_failed", "message": "chart query timed out"},
                },
                "message": "report is failed",
            },
            RemoteJobFailed,
            id="failure",
        ),
    ],
)
def test_download_report_complete_validates_the_event(
    sandbox: SandboxServer, tmp_path: Path, event: Any, error: type[Exception]
) -> None:
    op = DownloadReportOperator(task_id="download", report_id="rp_abc123", destination=str(tmp_path / "r.pdf"))
    with pytest.raises(error) as raised:
        op.execute_complete(make_context(), event)
    assert raised.type is error
    if error is RemoteJobFailed:
        assert "render_failed: chart query timed out" in str(raised.value)
    assert sandbox.state.requests == []
    assert not (tmp_path / "r.pdf").exists()


# The sensor -------------------------------------------------------------------------------------------


def sync_event(sandbox: SandboxServer, synced_after: str, deadline: float) -> dict[str, Any]:
    return only_event(
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


def test_sensor_complete_raises_on_an_error_event(sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(monkeypatch, sandbox, token="revoked-token")
    event = sync_event(sandbox, "2026-11-21T10:00:00Z", time.time() + 10)
    assert event["status"] == "error"
    sensor = DataSourceSyncedSensor(task_id="fresh", data_source_id=DATA_SOURCE, synced_after="2026-11-21T10:00:00Z")
    with pytest.raises(AirflowException, match="401") as raised:
        sensor.execute_complete(make_context(), event)
    assert raised.type is AirflowException


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
