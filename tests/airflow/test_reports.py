"""GenerateReportOperator and DownloadReportOperator through real Airflow runs."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.sandbox.config import Timings
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire.client import AnalyticsClient
from tests.support.airflow_runs import RunDag
from tests.support.fixtures import make_config
from tests.support.names import WAIT_MODES
from tests.support.reports import advance_after_first_answer


def first_dashboard(sandbox: SandboxServer) -> str:
    return str(sandbox.state.dashboards()[0]["id"])


@pytest.mark.parametrize("mode", WAIT_MODES)
@pytest.mark.parametrize("file_format", ["pdf", "csv"])
def test_generate_then_download_to_a_folder(
    run_dag: RunDag, sandbox: SandboxServer, tmp_path: Path, mode: str, file_format: Any
) -> None:
    result = run_dag(
        f"test_report_{mode}", dashboard_id=first_dashboard(sandbox), folder=str(tmp_path), format=file_format
    )
    assert result.states == {"generate": "success", "download": "success"}
    report = result.xcom("generate")
    assert report["status"] == "ready"
    [written] = list(tmp_path.iterdir())
    assert result.xcom("download") == str(written)
    assert written.suffix == f".{file_format}"
    assert hashlib.sha256(written.read_bytes()).hexdigest() == report["sha256"]
    assert result.xcom("download", "download")["sha256"] == report["sha256"]
    assert result.xcom("generate", "_link_ReportLink") == f"{sandbox.base_url}/ui/reports/{report['id']}"
    assert len(sandbox.state.reports()) == 1


@pytest.mark.parametrize("mode", WAIT_MODES)
def test_failed_report_fails_the_task_and_downloads_nothing(
    run_dag: RunDag, sandbox: SandboxServer, tmp_path: Path, mode: str
) -> None:
    sandbox.state.set_report_outcome("failed")
    result = run_dag(f"test_report_{mode}", dashboard_id=first_dashboard(sandbox), folder=str(tmp_path))
    assert result.states == {"generate": "failed", "download": "upstream_failed"}
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("mode", WAIT_MODES)
def test_download_waits_for_a_report_still_being_generated(
    run_dag: RunDag, sandbox: SandboxServer, tmp_path: Path, mode: str
) -> None:
    # The report generates until the first poll has been answered, then the clock jumps past its end: at
    # least two polls however long the run takes to start.
    sandbox.state.set_timings(Timings(report_pending=0.2, report_generating=600.0))
    with AnalyticsClient(make_config(sandbox)) as client:
        report = client.call(endpoints.generate_report([first_dashboard(sandbox)], "csv", name="late"))
    target = tmp_path / "exports" / "late.csv"
    with advance_after_first_answer(sandbox, f"/v1/reports/{report['id']}", 600.0):
        result = run_dag(f"test_download_wait_{mode}", report_id=report["id"], destination=str(target))
    assert result.states == {"download": "success"}
    assert result.xcom("download") == str(target)
    assert target.read_bytes().startswith(b"dashboard,chart,")
    polls = [r for r in sandbox.state.requests if r.path == f"/v1/reports/{report['id']}"]
    assert len(polls) >= 2


def test_download_refuses_an_existing_file_before_any_request(
    run_dag: RunDag, sandbox: SandboxServer, tmp_path: Path
) -> None:
    target = tmp_path / "taken.csv"
    target.write_text("keep me")
    result = run_dag("test_download_wait_poll", report_id="rp_whatever", destination=str(target))
    assert result.states == {"download": "failed"}
    assert target.read_text() == "keep me"
    assert sandbox.state.requests == []


def test_folder_of_downloads_is_left_clean_on_a_bad_digest(
    run_dag: RunDag, sandbox: SandboxServer, tmp_path: Path
) -> None:
    from airflow_provider_analytics.sandbox.faults import Fault

    sandbox.state.inject(Fault.bad_digest(times=5))
    result = run_dag("test_report_poll", dashboard_id=first_dashboard(sandbox), folder=str(tmp_path))
    assert result.states == {"generate": "success", "download": "failed"}
    assert list(tmp_path.iterdir()) == []
