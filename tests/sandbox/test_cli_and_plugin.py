"""The command line entry point and the pytest plugin."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import httpx

from airflow_provider_analytics.sandbox.server import SandboxServer


def test_cli_prints_connection_and_serves() -> None:
    command = [sys.executable, "-m", "airflow_provider_analytics.sandbox", "--port", "0", "--speed", "fast"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as process:
        try:
            assert process.stdout is not None
            connection = json.loads(process.stdout.readline())
            export_line = process.stdout.readline().strip()
            assert export_line == f"export AIRFLOW_CONN_ANALYTICS_DEFAULT='{json.dumps(connection)}'"
            assert connection["conn_type"] == "analytics"
            assert connection["extra"] == {"ui_url": f"{connection['host']}/ui"}
            response = httpx.get(
                f"{connection['host']}/v1/workflows", headers={"Authorization": f"Bearer {connection['password']}"}
            )
            assert response.status_code == 200
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
        assert httpx.get(f"{server.base_url}/_sandbox/health").status_code == 200
        port = server.port
    try:
        httpx.get(f"http://127.0.0.1:{port}/_sandbox/health", timeout=1)
        raise AssertionError("the server should be stopped")
    except httpx.TransportError:
        pass
