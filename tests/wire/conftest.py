"""Fixtures for the wire tests that go through the hook."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer


@pytest.fixture
def hook(sandbox: SandboxServer) -> Iterator[AnalyticsHook]:
    """The hook on ``analytics_default`` (the sandbox fixture points the env connection at the sandbox)."""
    made = AnalyticsHook()
    yield made
    made.close()
