"""Pytest fixtures that run the sandbox server (registered as the ``analytics_sandbox`` pytest11 plugin).

The plugin is loaded for every pytest run in an environment where the provider is installed, so it
imports nothing heavy at module level: FastAPI and uvicorn are only imported when a fixture is used.
Without the ``sandbox`` extra the plugin still loads; only a test that uses a fixture fails, with
the line that says what to install.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from airflow_provider_analytics.sandbox.http.server import SandboxServer

CONNECTION_ENV_VAR = "AIRFLOW_CONN_ANALYTICS_DEFAULT"


@pytest.fixture(scope="session")
def analytics_sandbox_server() -> Iterator[SandboxServer]:
    """One sandbox server for the whole session, with fast timings, on a free loopback port."""
    from airflow_provider_analytics.sandbox import SandboxDependencyError, require_dependencies

    try:
        require_dependencies()
    except SandboxDependencyError as error:
        pytest.fail(str(error), pytrace=False)
    from airflow_provider_analytics.sandbox.domain.config import SandboxConfig, Timings
    from airflow_provider_analytics.sandbox.http.server import SandboxServer

    server = SandboxServer(config=SandboxConfig(timings=Timings.fast()))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def analytics_sandbox(analytics_sandbox_server: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> SandboxServer:
    """The session's sandbox, freshly reset, with ``analytics_default`` pointing at it."""
    analytics_sandbox_server.state.reset()
    monkeypatch.setenv(CONNECTION_ENV_VAR, analytics_sandbox_server.connection_json())
    return analytics_sandbox_server
