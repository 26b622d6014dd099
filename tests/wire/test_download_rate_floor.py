"""A download that runs slower than the connection's ``min_download_rate`` (averaged over a window) ends with
``AnalyticsTimeoutError`` saying the rate, the floor and the extra to change; nothing partial is left.

The sandbox trickles the body (10 bytes every 50 ms, 200 B/s) well inside the read timeout and the download's
overall deadline, so only the floor can end it; the window is shortened from its 60 s to keep the test short.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_analytics.destinations._download import download_report_to
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.errors import AnalyticsInputError, AnalyticsTimeoutError
from tests.support.fixtures import make_config
from tests.support.reports import download_requests, files_under, ready_report

SIZE = 200  # 20 chunks of 10 bytes, 50 ms apart: about 1 s in all


def _trickle(sandbox: SandboxServer) -> None:
    sandbox.state.inject(
        Fault.stream(200, headers={"Content-Type": "application/pdf", "ETag": '"slow"'}, content_length=SIZE,
                     chunk=b"x" * 10, chunk_count=SIZE // 10, interval=0.05, path="/download$")
    )  # fmt: skip


def test_a_download_under_the_floor_ends_with_a_timeout(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    report = ready_report(hook, sandbox)
    _trickle(sandbox)
    config = make_config(sandbox, min_download_rate=1024, download_rate_window=0.3)
    with AnalyticsClient(config) as client, pytest.raises(AnalyticsTimeoutError) as caught:
        download_report_to(client, report["id"], f"{tmp_path}/")
    message = str(caught.value)
    assert f"report {report['id']}: the download ran at" in message
    assert "below the floor of 1024 bytes/s (connection extra min_download_rate" in message
    assert (caught.value.method, caught.value.path) == ("GET", f"/v1/reports/{report['id']}/download")
    assert files_under(tmp_path) == []  # no temporary file, no target
    assert len(download_requests(sandbox)) == 1  # slowness is not a lost connection: no resume


def test_a_floor_of_zero_lets_the_same_trickle_finish(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    report = ready_report(hook, sandbox)
    _trickle(sandbox)
    config = make_config(sandbox, min_download_rate=0, download_rate_window=0.3)
    with AnalyticsClient(config) as client:
        result = download_report_to(client, report["id"], f"{tmp_path}/")
    assert result.size == SIZE
    assert Path(result.uri).read_bytes() == b"x" * SIZE


def test_a_download_over_the_floor_is_not_disturbed(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    report = ready_report(hook, sandbox)
    config = make_config(sandbox, min_download_rate=1024, download_rate_window=0.3)
    with AnalyticsClient(config) as client:
        result = download_report_to(client, report["id"], f"{tmp_path}/", report=report)
    assert result.sha256 == report["sha256"]


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"min_download_rate": -1}, "min_download_rate must be a whole number"),
        ({"min_download_rate": 1.5}, "min_download_rate must be a whole number"),
        ({"min_download_rate": True}, "min_download_rate must be a whole number"),
        ({"download_rate_window": 0}, "download_rate_window must be a number of seconds over 0"),
        ({"download_rate_window": float("inf")}, "download_rate_window must be a number of seconds over 0"),
    ],
)
def test_the_floor_settings_are_checked(sandbox: SandboxServer, settings: dict[str, object], problem: str) -> None:
    with pytest.raises(AnalyticsInputError, match=problem):
        make_config(sandbox, **settings)
