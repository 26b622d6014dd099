"""Fixtures for the hook tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def hooks() -> Iterator[list[AnalyticsHook]]:
    """Hooks made in a test, closed after it."""
    made: list[AnalyticsHook] = []
    yield made
    for hook in made:
        hook.close()
