"""The provider's metrics, sent through Airflow's ``Stats``: StatsD, OpenTelemetry or nothing, as ``[metrics]`` says.

The wire layer reports its requests, its limiter and its downloads to an observer it defines and that knows no
Airflow (``wire/_observer.py``); :func:`report_to_airflow` installs :class:`AirflowObserver`, which forwards each event
to ``Stats`` (common-compat's, so the same call on every supported release), and each ended call to the task's
trace (``hooks/_traces.py``). The hooks' sending modules call it when
they are imported (``hooks/_sending.py``, ``hooks/async_analytics.py``), so every process that sends has it, and
parsing a DAG file never does. The waits (``triggers/base.py`` and ``operators/waiting.py``) report through
:func:`waiting` and :func:`work_ended`. docs/metrics.md lists every name, type and tag.

Nothing is sent when metrics are off: ``Stats`` is then Airflow's no-op logger. Tags are bounded: a route is its
template, an account its connection id, a kind of work one of three; never an id of the platform's or a token.
"""

from __future__ import annotations

import functools
import re
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from airflow_provider_analytics.hooks._traces import trace_call
from airflow_provider_analytics.wire._observer import CallRecord, PauseSource, WireObserver, install_observer, observer

__all__ = ["PREFIX", "AirflowObserver", "report_to_airflow", "route_tag", "waiting", "work_ended"]

# Every name the provider emits starts with this (DESIGN.md fixes it); Airflow's own statsd_prefix comes before it.
PREFIX = "analytics_platform."

_stats: Any = None
_PARAMETER = re.compile(r"\{(\w+)\}")


@functools.cache  # one entry per route of the contract
def route_tag(route: str) -> str:
    """A route template as a tag: ``/v1/reports/{report_id}`` reads ``/v1/reports/REPORT_ID``.

    StatsD backends take ``/`` in a tag but not braces (Airflow drops a metric whose InfluxDB-style tags hold one),
    and an upper-case name is no id the platform hands out, so the placeholder stays plain to see.

    :param route: the route's template, from the wire layer.
    """
    return _PARAMETER.sub(lambda found: found.group(1).upper(), route)


def stats() -> Any:
    """Airflow's ``Stats``, looked up on the first metric: common-compat imports the release's stats module then, and
    the StatsD or OpenTelemetry client only when metrics are on and something is measured."""
    global _stats
    if _stats is None:
        from airflow.providers.common.compat.sdk import Stats

        _stats = Stats
    return _stats


class AirflowObserver(WireObserver):
    """Forwards the wire layer's events to Airflow's ``Stats`` under :data:`PREFIX`, and its calls to the task's
    trace as spans (docs/metrics.md)."""

    def answered(self, account: str, method: str, route: str, status: str, seconds: float) -> None:
        tags = {"conn_id": account, "method": method, "route": route_tag(route), "status_class": status}
        stats().incr(f"{PREFIX}requests", tags=tags)
        stats().timing(f"{PREFIX}request_duration", timedelta(seconds=seconds), tags=tags)

    def retried(self, account: str, method: str, route: str, cause: str) -> None:
        stats().incr(
            f"{PREFIX}retries", tags={"conn_id": account, "method": method, "route": route_tag(route), "cause": cause}
        )

    def rate_limited(self, account: str, method: str, route: str) -> None:
        stats().incr(f"{PREFIX}rate_limited", tags={"conn_id": account, "method": method, "route": route_tag(route)})

    def queued(self, account: str, seconds: float) -> None:
        stats().timing(f"{PREFIX}limiter.queued", timedelta(seconds=seconds), tags={"conn_id": account})

    def limiter(self, account: str, pace: float, queue_depth: int, scope: str = "process", share: float = 1.0) -> None:
        tags = {"conn_id": account, "scope": scope}
        stats().gauge(f"{PREFIX}limiter.pace", pace, tags=tags)
        stats().gauge(f"{PREFIX}limiter.queue_depth", queue_depth, tags=tags)
        stats().gauge(f"{PREFIX}limiter.share", share, tags=tags)

    def paused(self, account: str, source: PauseSource) -> None:
        stats().incr(f"{PREFIX}limiter.pauses", tags={"conn_id": account, "source": source.value})

    def called(self, call: CallRecord) -> None:
        trace_call(call)

    def downloaded(self, account: str, size: int) -> None:
        if size:
            stats().incr(f"{PREFIX}downloaded_bytes", count=size, tags={"conn_id": account})


def report_to_airflow() -> None:
    """Make :class:`AirflowObserver` the process's observer of the wire layer, unless it already is (a test's own
    observer stays too); the hooks' sending modules call it when they are imported."""
    current = observer()
    if type(current) is WireObserver:
        install_observer(AirflowObserver())


_waits: Counter[str] = Counter()
_waits_lock = threading.Lock()  # a worker's threads and a triggerer's loop may wait side by side


def _count_wait(kind: str, change: int) -> None:
    with _waits_lock:
        _waits[kind] += change
        now = _waits[kind]
    stats().gauge(f"{PREFIX}waits_in_flight", now, tags={"kind": kind})


@contextmanager
def waiting(kind: str, counted: bool = True) -> Iterator[None]:
    """Count a wait for one piece of remote work in this process's ``waits_in_flight`` of its kind while it lasts.

    :param kind: ``execution``, ``report`` or ``sync``.
    :param counted: ``False`` for a wait that is about to defer: the triggerer counts it, and a worker's gauge
        that rose and fell at each deferral would only add noise.
    """
    if not counted:
        yield
        return
    _count_wait(kind, 1)
    try:
        yield
    finally:
        _count_wait(kind, -1)


def work_ended(kind: str, outcome: str, seconds: float | None) -> None:
    """A wait saw remote work reach its final state, ``seconds`` after the platform started it (``None``: the
    answer does not say when, and nothing is sent).

    :param kind: ``execution``, ``report`` or ``sync``.
    :param outcome: ``success`` or ``failure``.
    :param seconds: from the work's start to its final state, by the platform's own timestamps.
    """
    if seconds is not None:
        stats().timing(f"{PREFIX}work_duration", timedelta(seconds=seconds), tags={"kind": kind, "outcome": outcome})
