"""Deprecation and Sunset headers are logged once per process for each (header, route).

The rule is per process, so the check runs in a fresh interpreter where nothing was logged yet.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from airflow_provider_analytics.sandbox.server import SandboxServer

SCRIPT = textwrap.dedent(
    """
    import logging, sys
    from airflow_provider_analytics.wire import _endpoints as endpoints
    from airflow_provider_analytics.wire.client import AnalyticsClient
    from airflow_provider_analytics.wire.config import ClientConfig

    logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="%(message)s")
    with AnalyticsClient(ClientConfig(base_url=sys.argv[1], token=sys.argv[2])) as client:
        for _ in range(3):
            client.call(endpoints.list_reports())
        client.call(endpoints.list_charts())
    """
)


def test_deprecation_and_sunset_are_logged_once_per_route(sandbox: SandboxServer) -> None:
    sandbox.state.deprecate("/v1/reports", deprecation="@1767225600", sunset="Wed, 01 Jul 2027 00:00:00 GMT")
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, sandbox.base_url, sandbox.token],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = [line for line in result.stdout.splitlines() if "plan to move off" in line]
    assert lines == [
        "The Analytics Platform sent Deprecation: @1767225600 for GET /v1/reports; plan to move off this endpoint",
        "The Analytics Platform sent Sunset: Wed, 01 Jul 2027 00:00:00 GMT for GET /v1/reports; "
        "plan to move off this endpoint",
    ]
    assert len([r for r in sandbox.state.requests if r.path == "/v1/reports"]) == 3
