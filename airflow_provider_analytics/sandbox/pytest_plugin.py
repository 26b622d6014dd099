"""Pytest fixtures that run the sandbox server (registered as the ``analytics_sandbox`` pytest11 plugin).

The plugin is loaded for every pytest run in an environment where the provider is installed, so it
imports nothing heavy at module level: FastAPI and uvicorn are only imported when a fixture is used.
Without the ``sandbox`` extra the plugin still loads; only a test that uses a fixture fails, with
the line that says what to install.

A test can ask for a per-token rate limit with the ``analytics_sandbox`` marker, e.g.
``@pytest.mark.analytics_sandbox(rate_limit=20, rate_limit_headers=False)``; the ``analytics_sandbox``
fixture applies it after its reset and puts the configuration's values back after the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from airflow_provider_analytics.sandbox.domain.config import SandboxConfig
    from airflow_provider_analytics.sandbox.http.server import SandboxServer

CONNECTION_ENV_VAR = "AIRFLOW_CONN_ANALYTICS_DEFAULT"
MARKER = "analytics_sandbox"
MARKER_HELP = (
    f"{MARKER}(rate_limit=None, rate_limit_headers=True): the analytics_sandbox fixture limits each token to "
    "rate_limit requests per second (None: no per-second limit) and sends X-RateLimit-* headers unless "
    "rate_limit_headers is False"
)
_MARKER_OPTIONS = ("rate_limit", "rate_limit_headers")


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``analytics_sandbox`` marker, so that ``--strict-markers`` accepts it.

    :param config: the pytest configuration.
    """
    config.addinivalue_line("markers", MARKER_HELP)


def marker_rate_limit(marker: pytest.Mark | None, config: SandboxConfig) -> tuple[float | None, bool]:
    """The per-second limit and headers switch a test asks for: the marker's, else the configuration's.

    :param marker: the test's closest ``analytics_sandbox`` marker, if any.
    :param config: the session server's configuration (what a reset restores).
    :raises pytest.fail.Exception: the marker has positional arguments or one it does not know.
    """
    per_second, headers = config.rate_limit_per_second, config.rate_limit_headers
    if marker is None:
        return per_second, headers
    unknown = sorted(set(marker.kwargs) - set(_MARKER_OPTIONS))
    if marker.args or unknown:
        problem = f"unknown arguments {', '.join(unknown)}" if unknown else "positional arguments"
        pytest.fail(f"@pytest.mark.{MARKER} takes only {' and '.join(_MARKER_OPTIONS)}, not {problem}", pytrace=False)
    return marker.kwargs.get("rate_limit", per_second), marker.kwargs.get("rate_limit_headers", headers)


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
def analytics_sandbox(
    analytics_sandbox_server: SandboxServer, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[SandboxServer]:
    """The session's sandbox, freshly reset, with ``analytics_default`` pointing at it.

    With ``@pytest.mark.analytics_sandbox(rate_limit=N, rate_limit_headers=...)`` it limits each token to
    ``N`` requests per second for the test.
    """
    server = analytics_sandbox_server
    server.state.reset()
    per_second, headers = marker_rate_limit(request.node.get_closest_marker(MARKER), server.config)
    try:
        server.set_rate_limit(per_second, headers)
    except ValueError as error:
        pytest.fail(f"@pytest.mark.{MARKER}: {error}", pytrace=False)
    monkeypatch.setenv(CONNECTION_ENV_VAR, server.connection_json())
    try:
        yield server
    finally:
        # The server is shared: a test that only uses analytics_sandbox_server (no reset) must not inherit a
        # limit this test set, with the marker or with set_rate_limit.
        server.set_rate_limit(server.config.rate_limit_per_second, server.config.rate_limit_headers)
