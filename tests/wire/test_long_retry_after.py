"""A ``Retry-After`` of more than 10 digits asks for a longer wait than any other, never for none: it stops the
retries as a long one does, and is read without converting thousands of digits."""

from __future__ import annotations

import pytest

from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire.errors import RateLimitedError, ServerError
from airflow_provider_analytics.wire.retry import VERY_LONG_RETRY_AFTER, RetryPolicy, parse_retry_after
from tests.support.fixtures import ApiFactory
from tests.support.names import JSON_HEADERS

POLICY = RetryPolicy(max_retries=3, backoff_initial=0.01, backoff_max=0.05, max_retry_after=10)
LONG = ["99999999999", "99999999999999999999", "1" + "0" * 10_000]


def _charts_requests(sandbox: SandboxServer) -> list[object]:
    return [entry for entry in sandbox.state.requests if entry.path == "/v1/charts"]


@pytest.mark.parametrize("value", LONG, ids=lambda value: f"{len(value)}-digits")
def test_a_very_long_retry_after_on_429_stops_at_once(
    api_factory: ApiFactory, sandbox: SandboxServer, value: str
) -> None:
    api = api_factory(retry=POLICY)
    sandbox.state.inject(
        Fault.respond(429, headers={**JSON_HEADERS, "Retry-After": value}, body="{}", path="/v1/charts")
    )
    with pytest.raises(RateLimitedError) as caught:
        api.call(endpoints.list_charts())
    assert caught.value.retry_after == VERY_LONG_RETRY_AFTER
    assert api.sleeps == []
    assert len(_charts_requests(sandbox)) == 1


@pytest.mark.parametrize("value", LONG, ids=lambda value: f"{len(value)}-digits")
def test_a_very_long_retry_after_on_503_stops_at_once(
    api_factory: ApiFactory, sandbox: SandboxServer, value: str
) -> None:
    api = api_factory(retry=POLICY)
    sandbox.state.inject(Fault.status(503, path="/v1/charts$", retry_after=value))
    with pytest.raises(ServerError):
        api.call(endpoints.list_charts())
    assert api.sleeps == []
    assert len(_charts_requests(sandbox)) == 1


def test_leading_zeros_do_not_make_a_wait_long(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    api = api_factory(retry=POLICY)
    sandbox.state.inject(Fault.status(429, path="/v1/charts$", retry_after="0" * 30 + "2"))
    assert isinstance(api.call(endpoints.list_charts()), list)
    assert api.sleeps == [pytest.approx(2.0, abs=0.5)]


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("9999999999", 9_999_999_999.0),  # 10 digits: read as it is
        ("10000000000", VERY_LONG_RETRY_AFTER),
        ("7" * 100_000, VERY_LONG_RETRY_AFTER),  # int() would refuse it (over 4300 digits) or take long
        ("000000000000000000000000030", 30.0),
        ("0" * 50, 0.0),
    ],
)
def test_parse_retry_after_reads_long_values_as_very_long(value: str, seconds: float) -> None:
    assert parse_retry_after(value) == seconds
