"""The sandbox command line: its default port, a port in use, and the durations that slow runs down."""

from __future__ import annotations

import subprocess
import sys

import pytest

from airflow_provider_analytics.sandbox.__main__ import DEFAULT_PORT, _config, _parser, _timings
from airflow_provider_analytics.sandbox.config import Timings
from airflow_provider_analytics.sandbox.server import SandboxServer

CLI = [sys.executable, "-m", "airflow_provider_analytics.sandbox"]


def run_cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *arguments], capture_output=True, text=True, timeout=60, check=False)


def test_the_default_port_is_not_airflows() -> None:
    assert _parser().parse_args([]).port == DEFAULT_PORT == 8765


def test_a_port_in_use_is_one_line_and_status_2() -> None:
    with SandboxServer() as first:
        done = run_cli("--port", str(first.port), "--speed", "fast")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        f"port {first.port} is in use (is another sandbox or Airflow's api-server running?): pick another with --port\n"
    )


def test_an_address_it_cannot_listen_on_is_one_line_and_status_2() -> None:
    done = run_cli("--host", "203.0.113.9", "--port", "0")  # TEST-NET-3: never a local address
    assert done.returncode == 2
    assert done.stderr.startswith("cannot listen on 203.0.113.9 port 0: ")
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "arguments",
    [
        ["--port", "65536"],
        ["--port", "-1"],
        ["--port", "http"],
        ["--auto-sync", "-1"],
        *[["--rate-limit", value] for value in ("0", "-1", "nan", "inf", "fast")],
        *[[option, value] for option in ("--execution-seconds", "--report-seconds", "--sync-seconds")
          for value in ("0", "-3", "nan", "inf", "soon", "86400")],
    ],
)  # fmt: skip
def test_bad_values_are_refused(arguments: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        _parser().parse_args(arguments)
    assert exited.value.code == 2
    assert f"argument {arguments[0]}" in capsys.readouterr().err


def test_durations_split_a_fifth_and_four_fifths_on_top_of_the_speed() -> None:
    options = _parser().parse_args(
        ["--speed", "fast", "--execution-seconds", "600", "--report-seconds", "2.5", "--sync-seconds", "30"]
    )
    timings = _timings(options)
    assert (timings.execution_queued, timings.execution_running) == (120.0, 480.0)
    assert (timings.report_pending, timings.report_generating) == (0.5, 2.0)
    assert (timings.sync_pending, timings.sync_running) == (6.0, 24.0)
    assert (timings.execution_total, timings.report_total, timings.sync_total) == (600.0, 2.5, 30.0)
    assert timings.report_ttl == Timings.fast().report_ttl
    assert timings.auto_sync_interval is None


def test_without_durations_the_speed_decides() -> None:
    assert _timings(_parser().parse_args(["--speed", "fast"])) == Timings.fast()
    assert _timings(_parser().parse_args([])) == Timings.demo()
    only_reports = _timings(_parser().parse_args(["--report-seconds", "100"]))
    assert only_reports.execution_total == Timings.demo().execution_total
    assert only_reports.report_total == 100
    assert _timings(_parser().parse_args(["--auto-sync", "0"])).auto_sync_interval is None


def test_rate_limit_options_reach_the_configuration() -> None:
    default = _config(_parser().parse_args([]))
    assert (default.rate_limit_per_second, default.rate_limit_headers) == (None, True)
    limited = _config(_parser().parse_args(["--rate-limit", "2.5", "--no-rate-limit-headers"]))
    assert (limited.rate_limit_per_second, limited.rate_limit_headers) == (2.5, False)
