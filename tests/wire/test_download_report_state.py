"""Downloading a report that is not ready, failed or expired, or an id that is not one."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.config import Timings
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import AnalyticsInputError, ConflictError, GoneError
from tests.support.reports import download_requests, files_under, ready_report


def test_not_ready_report_is_a_conflict(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    sandbox.state.set_timings(Timings(report_pending=5, report_generating=5))  # cannot become ready meanwhile
    report = hook.generate_report(["db_sales"], "pdf")
    assert report["status"] == "pending"

    with pytest.raises(ConflictError) as caught:
        hook.download_report(report["id"], str(tmp_path) + "/")

    assert caught.value.status == 409
    assert caught.value.request_id
    assert files_under(tmp_path) == []
    assert [entry.status for entry in download_requests(sandbox)] == [409]  # not retried


def test_failed_report_is_a_conflict(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    sandbox.state.set_report_outcome("failed")
    report = hook.generate_report(["db_sales"], "pdf")
    sandbox.state.advance(5)
    assert hook.get_report(report["id"])["status"] == "failed"

    with pytest.raises(ConflictError):
        hook.download_report(report["id"], str(tmp_path / "x.pdf"))
    assert files_under(tmp_path) == []


def test_expired_report_is_gone(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox)
    sandbox.state.expire_report(report["id"])

    with pytest.raises(GoneError) as caught:
        hook.download_report(report["id"], str(tmp_path) + "/")

    assert caught.value.status == 410
    assert files_under(tmp_path) == []


def test_bad_report_id_is_refused_before_any_request(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    with pytest.raises(AnalyticsInputError, match="report_id"):
        hook.download_report("../reports", str(tmp_path) + "/")
    assert sandbox.state.requests == []
