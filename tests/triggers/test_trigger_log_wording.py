"""Triggers name what they wait on in the words the task uses (``execution ex_1 of workflow wf_2``), not a dict."""

from __future__ import annotations

import re

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.reports import DownloadReportOperator
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.triggers.data_sources import DataSourceSyncTrigger
from airflow_provider_analytics.triggers.executions import ExecutionTrigger
from airflow_provider_analytics.triggers.reports import ReportTrigger
from tests.support.names import DATA_SOURCE, POLL, WORKFLOW
from tests.support.triggers import only_event


def log_text(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> str:
    """Everything the trigger logged: Airflow 3.1+ logs through structlog to stdout, earlier through logging."""
    return capsys.readouterr().out + "\n".join(record.getMessage() for record in caplog.records)


def test_an_execution_triggers_status_lines_read_like_the_workers(
    sandbox: SandboxServer, hook: AnalyticsHook, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO")
    execution = hook.execute_workflow(WORKFLOW)
    trigger = ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL)
    assert only_event(trigger)["status"] == "success"
    text = log_text(capsys, caplog)
    named = f"execution {execution['id']} of workflow {WORKFLOW}"
    assert re.search(rf"{named} is (queued|running); next check in {POLL:g} s", text), text
    assert "{'workflow_id'" not in text


def test_task_and_trigger_name_the_work_alike() -> None:
    execute = ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW)
    execution = {"workflow_id": WORKFLOW, "execution_id": "ex_1"}
    trigger = execute.make_trigger(execute.job.from_external_id(execution), None)
    described = execute.job.from_external_id(execution).describe()
    assert described == trigger.described == f"execution ex_1 of workflow {WORKFLOW}"
    download = DownloadReportOperator(task_id="d", report_id="rp_1", destination="/tmp/never-written/")
    report = download.job.from_target({"report_id": "rp_1"})
    assert report.describe() == download.make_trigger(report, None).described == "report rp_1"
    assert ReportTrigger(report_id="rp_1", poll_interval=POLL).described == "report rp_1"
    sync = DataSourceSyncTrigger(data_source_id=DATA_SOURCE, synced_after="2026-11-20T00:00:00Z", poll_interval=POLL)
    assert sync.described == f"the sync of data source {DATA_SOURCE}"
