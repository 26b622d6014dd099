"""Operators against a hostile or broken platform: typed errors, no file left behind, no request flood."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.charts import GetChartDataOperator
from airflow_provider_analytics.operators.errors import RemoteJobFailed
from airflow_provider_analytics.operators.reports import DownloadReportOperator, GenerateReportOperator
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import AnalyticsInputError, DownloadIntegrityError, UnexpectedResponseError
from tests.support.context import make_context
from tests.support.final import raises_final
from tests.support.reports import ready_report

COLUMNS = [{"name": "day", "type": "date"}, {"name": "revenue", "type": "number"}]


@pytest.mark.parametrize(
    "factory",
    [
        lambda interval: ExecuteWorkflowOperator(task_id="t", workflow_id="wf_1", poll_interval=interval),
        lambda interval: GenerateReportOperator(task_id="t", dashboard_ids=["db_1"], poll_interval=interval),
        lambda interval: DownloadReportOperator(
            task_id="t", report_id="rp_1", destination="/tmp/x", poll_interval=interval
        ),
    ],
)
@pytest.mark.parametrize("interval", [0, -1, 0.01, timedelta(0)])
def test_a_poll_interval_that_would_flood_is_refused_at_parse_time(factory: Any, interval: Any) -> None:
    with pytest.raises(AnalyticsInputError, match="poll_interval must be"):
        factory(interval)


def test_chart_data_in_a_cursor_cycle_fails_typed_and_leaves_no_file(sandbox: SandboxServer, tmp_path: Path) -> None:
    sandbox.state.inject(Fault.pages(cycle=2, items=[["2026-11-01", 1]], extra={"columns": COLUMNS}, times=50))
    target = tmp_path / "rows.csv"
    op = GetChartDataOperator(task_id="t", chart_id="ch_revenue", destination=str(target))
    with pytest.raises(UnexpectedResponseError, match="run in a circle"):
        op.execute(make_context())
    assert list(tmp_path.iterdir()) == []
    assert len([r for r in sandbox.state.requests if r.path.endswith("/data")]) == 3


def test_chart_data_with_malformed_rows_fails_typed(sandbox: SandboxServer) -> None:
    sandbox.state.inject(Fault.pages(items=[["2026-11-01"]], extra={"columns": COLUMNS}))
    op = GetChartDataOperator(task_id="t", chart_id="ch_revenue")
    with pytest.raises(UnexpectedResponseError, match="row must be a list of 2 values"):
        op.execute(make_context())


def test_a_report_whose_error_is_a_string_fails_with_that_text(sandbox: SandboxServer) -> None:
    body = {"id": "rp_1", "status": "failed", "error": "renderer crashed"}
    sandbox.state.inject(Fault.respond(200, headers={"Content-Type": "application/json"}, body=json.dumps(body)))
    op = DownloadReportOperator(task_id="t", report_id="rp_1", destination="/tmp/never-written.pdf")
    with raises_final(RemoteJobFailed, match="report rp_1 failed: unknown_error: renderer crashed"):
        op.execute(make_context())


def test_a_download_that_does_not_match_the_reports_size_lands_nothing(sandbox: SandboxServer, tmp_path: Path) -> None:
    with AnalyticsHook() as hook:
        report = ready_report(hook, sandbox)
    lying = Fault.respond(
        200,
        headers={"Content-Type": "application/json"},
        body=json.dumps({**report, "size_bytes": 10}),
        path=f"/v1/reports/{report['id']}$",
    )
    sandbox.state.inject(lying)
    op = DownloadReportOperator(task_id="t", report_id=report["id"], destination=f"{tmp_path}/")
    with pytest.raises(DownloadIntegrityError, match="size_bytes 10"):
        op.execute(make_context())
    assert list(tmp_path.iterdir()) == []
