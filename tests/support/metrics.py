"""A real StatsD listener on loopback, and Airflow's ``Stats`` built again from ``[metrics]`` to send to it.

The listener is a UDP socket the test opens and closes (tests/support/statsd.py, which has no pytest so that
bench/ uses it too; its names are re-exported here). What arrived is read without waiting on a clock: the listener
sends itself a marker after the code under test ran, and reads until the marker comes.

Airflow builds its metrics backend from the configuration once per process (2.11-3.1: a metaclass chooses the
factory when ``airflow.stats`` is imported; 3.2 and 3.3: ``Stats.initialize``, which Airflow's task runner and its
serde module call). A test that switches ``[metrics]`` on through the environment therefore builds it again, as
those processes do, and builds it again after putting the environment back; the releases' differences are here
only (tests/support/releases.py holds the flags). No pytest here: ``bench/ratelimit_waits.py`` builds its
backend with :func:`rebuild_airflow_stats` too, as a triggerer does when it starts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from airflow.providers.common.compat.sdk import Stats, conf

from airflow_provider_analytics.version_compat import AIRFLOW_V_3_2_PLUS, AIRFLOW_V_3_3_PLUS
from tests.support.statsd import AIRFLOW_PREFIX, MARKER, Metric, StatsdListener, parse, statsd_environment

__all__ = [
    "AIRFLOW_PREFIX",
    "MARKER",
    "Metric",
    "StatsdListener",
    "airflow_metrics",
    "named",
    "parse",
    "rebuild_airflow_stats",
]


def _close_backend() -> None:
    """Close the socket of the StatsD client Airflow built, if it built one (no unclosed socket is left to GC)."""
    if AIRFLOW_V_3_3_PLUS:
        from airflow.sdk._shared.observability.metrics import stats

        backend = stats._backend
    else:
        backend = type.__getattribute__(Stats, "instance")
    client = getattr(backend, "statsd", None)
    if client is not None:
        client.close()


def rebuild_airflow_stats() -> None:
    """Build Airflow's metrics backend again from ``[metrics]`` as it reads now, the way the release builds it."""
    _close_backend()
    stats: Any = Stats  # typed as the release in .venv has it; the branches below are the others'
    factories: Any = None
    if AIRFLOW_V_3_2_PLUS:
        from airflow.sdk.observability.metrics import stats_utils as factories
    if AIRFLOW_V_3_3_PLUS:
        legacy = conf.getboolean("metrics", "legacy_names_on", fallback=True)  # as Airflow's own processes read it
        stats.initialize(factory=factories.get_stats_factory(), export_legacy_names=legacy)
    elif AIRFLOW_V_3_2_PLUS:
        stats.initialize(factory=factories.get_stats_factory(stats))
    else:
        metaclass = type(stats)
        if "factory" in vars(metaclass):
            delattr(metaclass, "factory")  # its __init__ chooses the factory again only when none is set
        metaclass.__init__(stats)
        stats.instance = None


@contextmanager
def airflow_metrics(*, on: bool) -> Iterator[StatsdListener]:
    """A listener, and Airflow's ``[metrics]`` pointed at it (``statsd_on`` as ``on`` says, tags after the name);
    afterwards the environment and the backend as they were, and the socket closed.

    :param on: switch metrics on (``statsd_on``), or leave them off with the listener named all the same.
    """
    listener = StatsdListener()
    try:
        with mock.patch.dict(os.environ, statsd_environment(listener.port, on=on)):
            rebuild_airflow_stats()
            yield listener
    finally:
        rebuild_airflow_stats()
        listener.close()


def named(metrics: list[Metric], name: str, **tags: str) -> list[Metric]:
    """The metrics of ``name`` (without Airflow's prefix) whose tags include ``tags``."""
    return [
        metric
        for metric in metrics
        if metric.name == f"{AIRFLOW_PREFIX}.{name}" and all(metric.tags.get(k) == v for k, v in tags.items())
    ]
