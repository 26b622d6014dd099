"""Fixtures for the sandbox's own tests (the sandbox fixtures themselves come from its pytest plugin)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from airflow_provider_analytics.sandbox.config import SandboxConfig
from airflow_provider_analytics.sandbox.domain.store import SandboxState
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.context import every_state_lasting
from tests.support.names import admin_headers


@pytest.fixture
def client(analytics_sandbox: SandboxServer) -> Iterator[httpx.Client]:
    """An httpx client for the freshly reset session sandbox, authenticated with the full-access token."""
    with httpx.Client(
        base_url=analytics_sandbox.base_url,
        headers={"Authorization": f"Bearer {analytics_sandbox.token}"},
        timeout=10,
    ) as http:
        yield http


@pytest.fixture
def admin(analytics_sandbox: SandboxServer) -> Iterator[httpx.Client]:
    """An httpx client for the same sandbox with its admin token: the one credential of the ``/_sandbox`` routes."""
    headers = admin_headers(analytics_sandbox)
    with httpx.Client(base_url=analytics_sandbox.base_url, headers=headers, timeout=10) as http:
        yield http


@pytest.fixture
def state(analytics_sandbox: SandboxServer) -> SandboxState:
    """The sandbox controls."""
    return analytics_sandbox.state


@pytest.fixture(scope="session")
def slow_sandbox_server() -> Iterator[SandboxServer]:
    """A second sandbox whose states last 10 s each, for asserting intermediate states without races."""
    with SandboxServer(config=SandboxConfig(timings=every_state_lasting(10))) as server:
        yield server


@pytest.fixture
def slow(slow_sandbox_server: SandboxServer) -> Iterator[tuple[httpx.Client, SandboxState]]:
    """A client and the controls of the (reset) slow sandbox."""
    slow_sandbox_server.state.reset()
    with httpx.Client(
        base_url=slow_sandbox_server.base_url,
        headers={"Authorization": f"Bearer {slow_sandbox_server.token}"},
        timeout=10,
    ) as http:
        yield http, slow_sandbox_server.state
