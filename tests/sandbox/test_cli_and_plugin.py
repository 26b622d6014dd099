"""The command line entry point and the pytest plugin."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any

import httpx

from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.names import admin_headers

ADMIN_TOKEN_EXPORT = "export ANALYTICS_SANDBOX_ADMIN_TOKEN="


def admin_token_line(line: str) -> str:
    """The admin token from the command line's third printed line (``export ANALYTICS_SANDBOX_ADMIN_TOKEN=...``)."""
    assert line.startswith(ADMIN_TOKEN_EXPORT), line
    return line.strip().removeprefix(ADMIN_TOKEN_EXPORT)


def test_cli_prints_connection_and_serves() -> None:
    command = [sys.executable, "-m", "airflow_provider_analytics.sandbox", "--port", "0", "--speed", "fast"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as process:
        try:
            assert process.stdout is not None
            connection = json.loads(process.stdout.readline())
            export_line = process.stdout.readline().strip()
            assert export_line == f"export AIRFLOW_CONN_ANALYTICS_DEFAULT='{json.dumps(connection)}'"
            admin_token = admin_token_line(process.stdout.readline())
            assert connection["conn_type"] == "analytics"
            assert connection["extra"] == {"ui_url": f"{connection['host']}/ui"}
            response = httpx.get(
                f"{connection['host']}/v1/workflows", headers={"Authorization": f"Bearer {connection['password']}"}
            )
            assert response.status_code == 200
            assert admin_token not in (connection["password"], "sandbox-token-limited")
            health = httpx.get(
                f"{connection['host']}/_sandbox/health", headers={"Authorization": f"Bearer {admin_token}"}
            )
            assert health.status_code == 200
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=15) == 0


def test_cli_rate_limit_without_headers() -> None:
    command = [
        *[sys.executable, "-m", "airflow_provider_analytics.sandbox", "--port", "0", "--speed", "fast"],
        *["--rate-limit", "1", "--no-rate-limit-headers"],
    ]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as process:
        try:
            assert process.stdout is not None
            connection = json.loads(process.stdout.readline())
            process.stdout.readline()
            admin = {"Authorization": f"Bearer {admin_token_line(process.stdout.readline())}"}
            headers = {"Authorization": f"Bearer {connection['password']}"}
            with httpx.Client(base_url=connection["host"], headers=headers) as client:
                answers = [client.get("/v1/charts")]
                while answers[-1].status_code != 429 and len(answers) < 10:  # 1/s: the second in a second is refused
                    answers.append(client.get("/v1/charts"))
                stats = client.get("/_sandbox/rate-limit", headers=admin).json()
            assert answers[-1].status_code == 429
            assert all(answer.headers["retry-after"] == "1" for answer in answers if answer.status_code == 429)
            assert not [name for answer in answers for name in answer.headers if name.startswith("x-ratelimit-")]
            assert (stats["per_second"], stats["headers"], stats["refused"]) == (1, False, 1)
            assert stats["allowed"] == len(answers) - 1
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=15) == 0


def test_plugin_fixture_points_airflow_at_the_sandbox(analytics_sandbox: SandboxServer) -> None:
    connection = json.loads(os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"])
    assert connection == json.loads(analytics_sandbox.connection_json())
    assert connection["host"] == analytics_sandbox.base_url
    assert connection["password"] == analytics_sandbox.token == "sandbox-token"


def test_server_context_manager_and_custom_token() -> None:
    with SandboxServer() as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        assert json.loads(server.connection_json(token="sandbox-token-limited"))["password"] == "sandbox-token-limited"
        assert httpx.get(f"{server.base_url}/_sandbox/health", headers=admin_headers(server)).status_code == 200
        port = server.port
    try:
        httpx.get(f"http://127.0.0.1:{port}/_sandbox/health", timeout=1)
        raise AssertionError("the server should be stopped")
    except httpx.TransportError:
        pass


def test_cli_durations_set_the_timings() -> None:
    from airflow_provider_analytics.sandbox.__main__ import _parser, _timings

    timings = _timings(
        _parser().parse_args(["--execution-seconds", "20", "--report-seconds", "10", "--sync-seconds", "5"])
    )
    assert (timings.execution_queued, timings.execution_running) == (4.0, 16.0)
    assert (timings.report_pending, timings.report_generating) == (2.0, 8.0)
    assert (timings.sync_pending, timings.sync_running) == (1.0, 4.0)


def test_cli_refuses_a_duration_that_is_not_positive() -> None:
    import pytest

    from airflow_provider_analytics.sandbox.__main__ import _parser

    with pytest.raises(SystemExit):
        _parser().parse_args(["--execution-seconds", "0"])


def test_a_port_in_use_is_one_clear_line_and_status_2(analytics_sandbox_server: Any) -> None:
    import subprocess
    import sys

    taken = str(analytics_sandbox_server.port)
    done = subprocess.run(
        [sys.executable, "-m", "airflow_provider_analytics.sandbox", "--port", taken],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"port {taken} is in use" in done.stderr
    assert "Traceback" not in done.stderr
