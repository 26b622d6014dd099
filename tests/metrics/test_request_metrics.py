"""The requests' metrics, read from a real StatsD listener: what a hook's calls, retries and 429s send through
Airflow's ``Stats``, with tags of bounded cardinality, and nothing when ``[metrics]`` is off."""

from __future__ import annotations

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import NotFoundError
from tests.support.metrics import StatsdListener, named

CONN = {"conn_id": "analytics_default"}


def test_each_attempt_is_counted_and_timed_by_method_route_and_status_class(
    sandbox: SandboxServer, hook: AnalyticsHook, statsd: StatsdListener
) -> None:
    sandbox.state.inject(Fault.status(503, path="/v1/charts$", times=1))

    hook.list_charts()

    metrics = statsd.read()
    tags = {**CONN, "method": "GET", "route": "/v1/charts"}
    assert [m.value for m in named(metrics, "analytics_platform.requests", **tags, status_class="5xx")] == [1]
    assert [m.value for m in named(metrics, "analytics_platform.requests", **tags, status_class="2xx")] == [1]
    assert [m.type for m in named(metrics, "analytics_platform.requests", **tags)] == ["c", "c"]
    durations = named(metrics, "analytics_platform.request_duration", **tags)
    assert [(m.type, m.tags["status_class"]) for m in durations] == [("ms", "5xx"), ("ms", "2xx")]
    assert all(m.value >= 0 for m in durations)
    assert [m.value for m in named(metrics, "analytics_platform.retries", **tags, cause="server_error")] == [1]


def test_a_429_counts_a_refusal_a_retry_a_pause_and_the_limiters_pace(
    sandbox: SandboxServer, hook: AnalyticsHook, statsd: StatsdListener
) -> None:
    sandbox.state.inject(Fault.status(429, path="/v1/data-sources$", retry_after=1, times=1))

    hook.list_data_sources()

    metrics = statsd.read()
    tags = {**CONN, "method": "GET", "route": "/v1/data-sources"}
    assert [m.value for m in named(metrics, "analytics_platform.rate_limited", **tags)] == [1]
    assert [m.value for m in named(metrics, "analytics_platform.retries", **tags, cause="rate_limited")] == [1]
    assert [m.value for m in named(metrics, "analytics_platform.limiter.pauses", **CONN, source="retry_after")] == [1]
    # The refused request waited for its turn behind the pause, then went: queued, and the account paced.
    queued = named(metrics, "analytics_platform.limiter.queued", **CONN)
    assert [m.type for m in queued] == ["ms"]
    pace = named(metrics, "analytics_platform.limiter.pace", **CONN)
    assert [m.type for m in pace] == ["g"]
    assert pace[0].value > 0
    assert [m.value for m in named(metrics, "analytics_platform.limiter.queue_depth", **CONN)] == [0]
    statuses = [m.tags["status_class"] for m in named(metrics, "analytics_platform.requests", **tags)]
    assert statuses == ["4xx", "2xx"]


def test_tags_name_route_templates_and_the_connection_never_an_id_or_the_token(
    sandbox: SandboxServer, hook: AnalyticsHook, statsd: StatsdListener
) -> None:
    with pytest.raises(NotFoundError):
        hook.get_report("rp_nothere42")

    metrics = statsd.read()
    routes = {m.tags["route"] for m in named(metrics, "analytics_platform.requests", **CONN)}
    # The 404 on a route with an id, then the one probe that tells a missing report from a wrong base URL.
    assert routes == {"/v1/reports/REPORT_ID", "/v1/workflows"}
    sent = b"".join(statsd.raw)
    assert b"rp_nothere42" not in sent
    assert sandbox.token.encode() not in sent
    assert {m.name.split(",")[0] for m in metrics} <= {
        "airflow.analytics_platform.requests",
        "airflow.analytics_platform.request_duration",
    }


def test_nothing_is_sent_when_metrics_are_off(
    sandbox: SandboxServer, hook: AnalyticsHook, metrics_off: StatsdListener
) -> None:
    sandbox.state.inject(Fault.status(503, path="/v1/charts$", times=1))
    sandbox.state.inject(Fault.status(429, path="/v1/data-sources$", retry_after=1, times=1))

    hook.list_charts()
    hook.list_data_sources()

    assert metrics_off.read() == []
    assert metrics_off.raw == []
