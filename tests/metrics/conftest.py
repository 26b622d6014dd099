"""The metrics tests' fixtures: a real StatsD listener, with ``[metrics]`` on or off (tests/support/metrics.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.metrics import StatsdListener, airflow_metrics


@pytest.fixture
def statsd() -> Iterator[StatsdListener]:
    """A listener, and Airflow configured ``[metrics] statsd_on = True`` to send to it (tags after the name)."""
    with airflow_metrics(on=True) as listener:
        yield listener


@pytest.fixture
def metrics_off() -> Iterator[StatsdListener]:
    """A listener that ``[metrics]`` names as its StatsD host, with ``statsd_on`` left off (the default)."""
    with airflow_metrics(on=False) as listener:
        yield listener
