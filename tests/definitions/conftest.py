"""Fixtures of the definitions tests: an emptied workspace, hooks a test makes (helpers are in ``helpers.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.definitions.helpers import workspace


@pytest.fixture
def empty(sandbox: SandboxServer) -> SandboxServer:
    """The sandbox with its default workspace emptied of the seeded sample objects."""
    with sandbox.state.lock:
        records = workspace(sandbox)
        for kind in (records.dashboards, records.charts, records.data_sources, records.workflows):
            kind.clear()
    return sandbox


@pytest.fixture
def fresh_hooks() -> Iterator[list[AnalyticsHook]]:
    """Hooks a test makes with ``new_hook`` (a retried task, another user), closed after it."""
    made: list[AnalyticsHook] = []
    yield made
    for hook in made:
        hook.close()
