"""ReportTrigger's poll loop against the sandbox: ready, failed or expired, timeout, 503s, an unknown report."""

from __future__ import annotations

import time

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.triggers.reports import ReportTrigger
from tests.support.context import SLOW
from tests.support.names import POLL
from tests.support.triggers import only_event, report_view, requests_to, set_connection, soon


def test_report_trigger_fires_success(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    report = hook.generate_report(["db_sales"], "csv")
    event = only_event(ReportTrigger(report_id=report["id"], poll_interval=POLL, deadline=soon()))
    final = report_view(sandbox, report["id"])
    assert final["status"] == "ready"
    assert event == {
        "status": "success",
        "kind": "report",
        "target": {"report_id": report["id"]},
        "resource": final,
        "message": f"report {report['id']} is ready",
    }


def test_report_trigger_fires_failure(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    sandbox.state.set_report_outcome("failed")
    report = hook.generate_report(["db_sales"], "pdf")
    event = only_event(ReportTrigger(report_id=report["id"], poll_interval=POLL, deadline=soon()))
    final = report_view(sandbox, report["id"])
    assert event == {
        "status": "failure",
        "kind": "report",
        "target": {"report_id": report["id"]},
        "resource": final,
        "message": f"report {report['id']} failed",
    }
    assert final["error"]["type"] == "render_failed"


def test_report_trigger_fires_failure_for_an_expired_report(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    report = hook.generate_report(["db_sales"], "csv")
    sandbox.state.advance(5)
    assert report_view(sandbox, report["id"])["status"] == "ready"
    sandbox.state.expire_report(report["id"])
    event = only_event(ReportTrigger(report_id=report["id"], poll_interval=POLL, deadline=soon()))
    assert (event["status"], event["resource"]["status"]) == ("failure", "expired")


def test_report_trigger_times_out(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    sandbox.state.set_timings(SLOW)
    report = hook.generate_report(["db_sales"], "csv")
    event = only_event(ReportTrigger(report_id=report["id"], poll_interval=POLL, deadline=time.time() + 0.2))
    assert event == {
        "status": "timeout",
        "kind": "report",
        "target": {"report_id": report["id"]},
        "resource": report_view(sandbox, report["id"]),
        "message": f"gave up waiting for report {report['id']}",
    }
    assert event["resource"]["status"] == "pending"


def test_report_trigger_keeps_polling_through_503s(
    sandbox: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = hook.generate_report(["db_sales"], "csv")
    path = f"/v1/reports/{report['id']}"
    set_connection(monkeypatch, sandbox, max_retries=0)
    sandbox.state.inject(Fault.status(503, path=f"{path}$", times=2))
    event = only_event(ReportTrigger(report_id=report["id"], poll_interval=POLL, deadline=soon()))
    assert event["status"] == "success"
    statuses = requests_to(sandbox, path)
    assert statuses[:2] == [503, 503]
    assert statuses[-1] == 200


def test_report_trigger_reports_unknown_report_as_error(sandbox: SandboxServer) -> None:
    event = only_event(ReportTrigger(report_id="rp_doesnotexist", poll_interval=POLL, deadline=soon()))
    assert event["status"] == "error"
    assert event["resource"] is None
    assert "404" in event["message"]
