"""Lineage never fails a task and never holds it long: a platform that is down or slow, a missing connection,
unreadable XCom. Each leaves a partial lineage (what is known without the platform) and a log line."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from airflow_provider_analytics.lineage._extract import EXTRA_CALL_TIMEOUT
from airflow_provider_analytics.lineage._facets import FACET_NAME
from airflow_provider_analytics.operators.charts import GetChartDataOperator
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.lineage.conftest import RecordingTaskInstance, names, run_task


def chart_rows_task(tmp_path: Path) -> tuple[GetChartDataOperator, RecordingTaskInstance]:
    operator = GetChartDataOperator(task_id="rows", chart_id="ch_revenue", destination=str(tmp_path / "rows.csv"))
    return operator, run_task(operator)


def test_platform_down_gives_partial_lineage_after_one_attempt(
    sandbox: SandboxServer, platform: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    operator, ti = chart_rows_task(tmp_path)
    sandbox.state.inject(Fault.status(503, path="^/v1/charts$", times=10))
    before = len(sandbox.state.requests)
    with caplog.at_level(logging.WARNING, logger="airflow_provider_analytics.lineage"):
        lineage = operator.get_openlineage_facets_on_complete(ti)
    assert [entry.path for entry in sandbox.state.requests[before:]] == ["/v1/charts"], "no retries for lineage"
    assert names(lineage.inputs) == [(platform, "chart/ch_revenue")]
    assert names(lineage.outputs) == [("file", str(tmp_path / "rows.csv"))]
    gaps = lineage.run_facets[FACET_NAME].gaps
    assert len(gaps) == 1
    assert "ch_revenue's data source" in gaps[0]
    assert "503" in gaps[0]
    assert "could not read chart ch_revenue's data source" in caplog.text


def test_a_slow_platform_costs_at_most_the_lineage_timeout(sandbox: SandboxServer, tmp_path: Path) -> None:
    operator, ti = chart_rows_task(tmp_path)
    sandbox.state.inject(Fault.delay(30, path="^/v1/charts$"))
    before = len(sandbox.state.requests)
    lineage = operator.get_openlineage_facets_on_complete(ti)
    # The one call lineage made gave up at the lineage timeout (the client's message says which bound ended
    # it), not at the connection's 30 s, and was not retried: the 30 s answer was never waited for.
    [gap] = lineage.run_facets[FACET_NAME].gaps
    assert f"timed out after {EXTRA_CALL_TIMEOUT:g} s" in gap
    assert [entry.path for entry in sandbox.state.requests[before:]] == ["/v1/charts"]


def test_a_missing_connection_gives_an_empty_lineage(
    sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    operator = ExecuteWorkflowOperator(
        task_id="enrich", workflow_id="wf_nightly_enrichment", poll_interval=0.1, deferrable=False
    )
    ti = run_task(operator)
    fresh = ExecuteWorkflowOperator(task_id="enrich", workflow_id="wf_nightly_enrichment")
    monkeypatch.delenv("AIRFLOW_CONN_ANALYTICS_DEFAULT")
    with caplog.at_level(logging.WARNING, logger="airflow_provider_analytics.lineage"):
        lineage = fresh.get_openlineage_facets_on_complete(ti)
    assert (lineage.inputs, lineage.outputs, lineage.run_facets) == ([], [], {})
    assert "no platform lineage for enrich" in caplog.text.lower()


def test_a_task_that_never_ran_here_reports_its_arguments_only(sandbox: SandboxServer, platform: str) -> None:
    # A task resumed in another process, or failed before starting anything: nothing kept in memory.
    operator = ExecuteWorkflowOperator(task_id="enrich", workflow_id="wf_nightly_enrichment")
    assert operator.hook.connection is not None  # the task looked its connection up while it ran
    lineage = operator.get_openlineage_facets_on_failure(RecordingTaskInstance())
    assert names(lineage.inputs) == [(platform, "workflow/wf_nightly_enrichment")]
    run = lineage.run_facets[FACET_NAME]
    assert (run.ids, run.status, run.gaps) == (
        {"workflow_id": "wf_nightly_enrichment"},
        None,
        ["no execution was started"],
    )
