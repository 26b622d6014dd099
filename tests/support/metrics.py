"""A real StatsD listener on loopback, and Airflow's ``Stats`` built again from ``[metrics]`` to send to it.

The listener is a UDP socket the test opens and closes. What arrived is read without waiting on a clock: the
listener sends itself a marker after the code under test ran, and reads until the marker comes. Loopback delivers a
datagram into the receiving socket's queue during ``sendto``, so everything Airflow's StatsD client sent before the
marker is in the queue before it.

Airflow builds its metrics backend from the configuration once per process (2.11-3.1: a metaclass chooses the
factory when ``airflow.stats`` is imported; 3.2 and 3.3: ``Stats.initialize``, which Airflow's task runner and its
serde module call). A test that switches ``[metrics]`` on through the environment therefore builds it again, as
those processes do, and builds it again after putting the environment back; the releases' differences are here
only (tests/support/releases.py holds the flags).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import Stats, conf

from airflow_provider_analytics.version_compat import AIRFLOW_V_3_2_PLUS, AIRFLOW_V_3_3_PLUS

MARKER = b"tests.marker:1|c"
# Airflow's own statsd_prefix, before the provider's analytics_platform.
AIRFLOW_PREFIX = "airflow"


@dataclass(frozen=True)
class Metric:
    """One StatsD line as Airflow sends it with ``statsd_influxdb_enabled`` (tags after the name).

    :param name: the metric's name, Airflow's prefix included.
    :param tags: its tags.
    :param value: the value, as sent.
    :param type: ``c`` (counter), ``ms`` (timer) or ``g`` (gauge).
    """

    name: str
    tags: dict[str, str] = field(hash=False)
    value: float
    type: str


def parse(line: str) -> Metric:
    """Read ``name,tag=value,...:value|type`` (and an optional ``|@rate``)."""
    head, _, rest = line.rpartition(":")
    name, *pairs = head.split(",")
    value, kind, *_ = rest.split("|")
    return Metric(name, dict(pair.split("=", 1) for pair in pairs), float(value), kind)


class StatsdListener:
    """A StatsD server on ``127.0.0.1``: one UDP socket on a free port."""

    def __init__(self) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.port: int = self.socket.getsockname()[1]
        self.raw: list[bytes] = []

    def read(self) -> list[Metric]:
        """Every metric that arrived since the last read (their datagrams also kept in :attr:`raw`)."""
        self.socket.sendto(MARKER, ("127.0.0.1", self.port))
        metrics = []
        while (datagram := self.socket.recv(65536)) != MARKER:
            self.raw.append(datagram)
            metrics += [parse(line) for line in datagram.decode().splitlines() if line]
        return metrics

    def close(self) -> None:
        """Close the socket."""
        self.socket.close()


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
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIRFLOW__METRICS__STATSD_ON", str(on))
        patch.setenv("AIRFLOW__METRICS__STATSD_HOST", "127.0.0.1")
        patch.setenv("AIRFLOW__METRICS__STATSD_PORT", str(listener.port))
        patch.setenv("AIRFLOW__METRICS__STATSD_PREFIX", AIRFLOW_PREFIX)
        patch.setenv("AIRFLOW__METRICS__STATSD_INFLUXDB_ENABLED", "True")
        # 2.11 warns (RemovedInAirflow3Warning) at every backend it builds with the basic name validator; 3.x only
        # has the pattern-matching one and ignores the option.
        patch.setenv("AIRFLOW__METRICS__METRICS_USE_PATTERN_MATCH", "True")
        rebuild_airflow_stats()
        try:
            yield listener
        finally:
            patch.undo()
            rebuild_airflow_stats()
            listener.close()


def named(metrics: list[Metric], name: str, **tags: str) -> list[Metric]:
    """The metrics of ``name`` (without Airflow's prefix) whose tags include ``tags``."""
    return [
        metric
        for metric in metrics
        if metric.name == f"{AIRFLOW_PREFIX}.{name}" and all(metric.tags.get(k) == v for k, v in tags.items())
    ]
