"""The metrics tests' fixtures: a real StatsD listener, with ``[metrics]`` on or off (tests/support/metrics.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # it imports Airflow, and test_metrics_page.py runs where Airflow cannot be imported
    from tests.support.metrics import StatsdListener


@pytest.fixture
def statsd() -> Iterator[StatsdListener]:
    """A listener, and Airflow configured ``[metrics] statsd_on = True`` to send to it (tags after the name)."""
    from tests.support.metrics import airflow_metrics

    with airflow_metrics(on=True) as listener:
        yield listener


@pytest.fixture
def metrics_off() -> Iterator[StatsdListener]:
    """A listener that ``[metrics]`` names as its StatsD host, with ``statsd_on`` left off (the default)."""
    from tests.support.metrics import airflow_metrics

    with airflow_metrics(on=False) as listener:
        yield listener
