"""Bad operator and sensor arguments: a clear AnalyticsInputError before any request; durations checked when built."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.operators.charts import CreateChartOperator, GetChartDataOperator
from airflow_provider_analytics.operators.dashboards import CreateDashboardOperator, UpdateDashboardOperator
from airflow_provider_analytics.operators.data_sources import ConnectDataSourceOperator
from airflow_provider_analytics.operators.reports import DownloadReportOperator, GenerateReportOperator
from airflow_provider_analytics.operators.workflows import CreateWorkflowOperator, ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.support.context import make_context
from tests.support.final import raises_final
from tests.support.names import DATA_SOURCE, WORKFLOW


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
        lambda tmp: ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, inputs=["day", "2026-11-20"]),  # type: ignore[arg-type]  # the wrong type is the test
        r"inputs must be a mapping \(dict\), got list",
        id="list-inputs",
    ),
    pytest.param(
        lambda tmp: ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, inputs='{"day": "2026-11-20"}'),  # type: ignore[arg-type]  # the wrong type is the test
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
        lambda tmp: GenerateReportOperator(task_id="t", dashboard_ids=["db_sales"], parameters=["rows", 5]),  # type: ignore[arg-type]  # the wrong type is the test
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
        lambda tmp: ConnectDataSourceOperator(task_id="t", name="wh", type="postgres", connection="host=db"),  # type: ignore[arg-type]  # the wrong type is the test
        r"connection must be a mapping \(dict\), got str",
        id="data-source-connection-not-mapping",
    ),
    pytest.param(
        lambda tmp: CreateWorkflowOperator(task_id="t", name="etl", configuration=["step"]),  # type: ignore[arg-type]  # the wrong type is the test
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
    with raises_final(AnalyticsInputError, match=message):
        op.execute(context)
    assert sandbox.state.requests == []
    assert context["ti"].xcom == {}
    assert context["task_state_store"].values == {}


def test_existing_destination_is_kept_untouched(sandbox: SandboxServer, tmp_path: Path) -> None:
    target = existing_file(tmp_path, "report.pdf")
    with raises_final(AnalyticsInputError):
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


@pytest.mark.parametrize(
    ("parameter", "value"), [("poke_interval", -1), ("poke_interval", 0), ("timeout", -1), ("poke_interval", "soon")]
)
def test_sensor_bad_intervals_fail_at_construction(parameter: str, value: Any) -> None:
    with pytest.raises(AnalyticsInputError, match=f"{parameter} must be a positive number"):
        DataSourceSyncedSensor(task_id="t", data_source_id=DATA_SOURCE, **{parameter: value})
