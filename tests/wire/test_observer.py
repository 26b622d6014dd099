"""The wire layer's observer: both transports report the same events from the one retry loop, without Airflow.

The observer here records what it is told; tests/metrics reads what Airflow's StatsD backend sends from the hooks'
observer, on every release.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._observer import (
    CallRecord,
    PauseSource,
    WireObserver,
    install_observer,
    status_class,
)
from airflow_provider_analytics.wire.errors import NotFoundError
from tests.support.fixtures import ApiFactory


class Recorder(WireObserver):
    """Keeps every event as a tuple: its name, then its arguments."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.errors: list[str | None] = []

    def answered(self, account: str, method: str, route: str, status: str, seconds: float) -> None:
        assert seconds >= 0
        self.events.append(("answered", account, method, route, status))

    def retried(self, account: str, method: str, route: str, cause: str) -> None:
        self.events.append(("retried", account, method, route, cause))

    def rate_limited(self, account: str, method: str, route: str) -> None:
        self.events.append(("rate_limited", account, method, route))

    def queued(self, account: str, seconds: float) -> None:
        self.events.append(("queued", account))

    def limiter(self, account: str, pace: float, queue_depth: int, scope: str = "process", share: float = 1.0) -> None:
        assert scope == "process"
        assert share == 1.0
        self.events.append(("limiter", account, pace > 0, queue_depth))

    def paused(self, account: str, source: PauseSource) -> None:
        self.events.append(("paused", account, source.value))

    def downloaded(self, account: str, size: int) -> None:
        self.events.append(("downloaded", account, size))

    def called(self, call: CallRecord) -> None:
        assert call.started_ns <= time.time_ns()
        assert call.request_id is None or call.request_id.startswith("req_")
        self.events.append(
            ("called", call.account, call.method, call.route, call.attempts, call.status, call.request_id is not None)
        )
        self.errors.append(call.error)


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    made = Recorder()
    previous = install_observer(made)
    yield made
    install_observer(previous)


def test_status_classes() -> None:
    assert [status_class(code) for code in (200, 201, 404, 429, 503, None)] == [
        "2xx",
        "2xx",
        "4xx",
        "4xx",
        "5xx",
        "no_answer",
    ]


def test_both_transports_report_attempts_retries_and_refusals_alike(
    sandbox: SandboxServer, api_factory: ApiFactory, recorder: Recorder
) -> None:
    api = api_factory(connection_id="warehouse_api")
    sandbox.state.inject(Fault.status(503, path="/v1/charts$", times=1))
    sandbox.state.inject(Fault.status(429, path="/v1/charts$", retry_after=0, times=1))

    api.call(endpoints.list_charts())

    account, route = "warehouse_api", "/v1/charts"
    assert recorder.events == [
        ("answered", account, "GET", route, "5xx"),
        ("retried", account, "GET", route, "server_error"),
        ("answered", account, "GET", route, "4xx"),
        ("rate_limited", account, "GET", route),
        ("paused", account, "retry_after"),
        ("retried", account, "GET", route, "rate_limited"),
        ("limiter", account, True, 0),
        ("queued", account),
        ("answered", account, "GET", route, "2xx"),
        ("called", account, "GET", route, 3, 200, True),
    ]
    assert recorder.errors == [None]


def test_a_route_with_ids_is_reported_by_its_template(
    sandbox: SandboxServer, api_factory: ApiFactory, recorder: Recorder
) -> None:
    api = api_factory()

    api.call(endpoints.get_sync_status("ds_warehouse"))

    route = "/v1/data-sources/{data_source_id}/sync"
    assert recorder.events == [
        ("answered", "none", "GET", route, "2xx"),
        ("called", "none", "GET", route, 1, 200, True),
    ]


def test_a_failed_call_is_reported_once_with_its_error_and_its_probe_is_no_call(
    sandbox: SandboxServer, api_factory: ApiFactory, recorder: Recorder
) -> None:
    api = api_factory()

    with pytest.raises(NotFoundError):
        api.call(endpoints.get_report("rp_nothere42"))

    route = "/v1/reports/{report_id}"
    assert recorder.events == [
        ("answered", "none", "GET", route, "4xx"),
        ("answered", "none", "GET", "/v1/workflows", "2xx"),  # the probe: the base URL serves the API
        ("called", "none", "GET", route, 1, 404, True),
    ]
    assert recorder.errors == ["NotFoundError"]
