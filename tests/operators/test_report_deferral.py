"""GenerateReportOperator and DownloadReportOperator deferred: the trigger they defer with and ``execute_complete``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import AirflowException, TaskDeferred

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.errors import RemoteJobFailed, RemoteJobTimeout, UnexpectedEventError
from airflow_provider_analytics.operators.reports import DownloadReportOperator, GenerateReportOperator
from airflow_provider_analytics.sandbox.config import Timings
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.triggers.reports import ReportTrigger
from tests.support.context import SLOW, make_context
from tests.support.final import raises_final
from tests.support.names import POLL
from tests.support.releases import HAS_TASK_STATE_STORE
from tests.support.triggers import STARTED, event_for, triggerer_event


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
    # Stored by Airflow 3.3's ResumableJobMixin; common-compat's stand-in before 3.3 stores nothing.
    stored = {"analytics_report": report["id"]}
    assert context["task_state_store"].values == (stored if HAS_TASK_STATE_STORE else {})

    sandbox.state.set_timings(Timings.fast())
    event = triggerer_event(trigger)
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
    event = triggerer_event(trigger)
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
    if error is RemoteJobFailed:  # a report that failed stays failed: no retry can change it
        with raises_final(RemoteJobFailed, match="render_failed: chart query timed out"):
            op.execute_complete(make_context(), event)
    else:
        with pytest.raises(error) as raised:
            op.execute_complete(make_context(), event)
        assert raised.type is error
    assert sandbox.state.requests == []
    assert not (tmp_path / "r.pdf").exists()
