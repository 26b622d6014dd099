"""Fixtures for trigger tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer


@pytest.fixture
def hook(sandbox: SandboxServer) -> Iterator[AnalyticsHook]:
    """A blocking hook on the sandbox, for setting up executions and reports."""
    made = AnalyticsHook()
    yield made
    made.close()
