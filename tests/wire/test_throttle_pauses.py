"""A pause one answer asks for is bounded and seen: a ``X-RateLimit-Reset`` a day ahead, a ``Retry-After`` of years.

Each header may ask the token's requests to wait: the limiter holds them for ``max_retry_after`` at most, fails at
once a request whose deadline comes first (naming the header and the time), and logs one WARNING per pause.
"""

from __future__ import annotations

import logging
import re
import time

import pytest

from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._deadline import call_deadline, waiting_for_no_pause
from airflow_provider_analytics.wire._throttle import RateLimiter
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.errors import RateLimitedError
from airflow_provider_analytics.wire.retry import RetryPolicy
from tests.support.fixtures import ApiFactory, make_config

POLICY = RetryPolicy(max_retries=2, backoff_initial=0.01, backoff_max=0.05, max_retry_after=10)
LOGGER = "airflow_provider_analytics.wire"
YEAR_9999 = "Fri, 31 Dec 9999 23:59:59 GMT"


def _day_ahead() -> dict[str, str]:
    """A successful answer's headers: the window is used up and resets in 86,000 s (under the one-day guard)."""
    reset = str(int(time.time()) + 86_000)
    return {"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING]


def test_a_reset_a_day_ahead_holds_the_token_for_max_retry_after_and_says_so_once(
    api_factory: ApiFactory, sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    api = api_factory(retry=POLICY)
    sandbox.state.inject(Fault.headers(set=_day_ahead(), path="/v1/charts$"))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        api.call(endpoints.list_charts())
        api.call(endpoints.list_data_sources())
    # The client's clock moves by the sleeps it asks for: the second request waited out the pause, held at the cap.
    assert sum(api.sleeps) == pytest.approx(POLICY.max_retry_after, abs=1.0)
    assert len(sandbox.state.requests) == 2
    lines = _warnings(caplog)
    assert len(lines) == 1, lines
    assert re.search(r"X-RateLimit-Reset asked this token to wait (8599\d|86000) s \(until \d{4}-", lines[0])
    assert "waits 10 s" in lines[0]
    assert "max_retry_after=10 s" in lines[0]


@pytest.mark.parametrize("retry_after", ["999999999", YEAR_9999])
def test_a_retry_after_of_years_fails_the_refused_call_and_holds_the_rest_for_the_cap_with_one_warning(
    api_factory: ApiFactory, sandbox: SandboxServer, caplog: pytest.LogCaptureFixture, retry_after: str
) -> None:
    api = api_factory(retry=POLICY)
    sandbox.state.inject(Fault.status(429, path="/v1/charts$", retry_after=retry_after))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        with pytest.raises(RateLimitedError):
            api.call(endpoints.list_charts())
        lines = _warnings(caplog)  # seen while the pause holds, not when it is over
        api.call(endpoints.list_data_sources())
    assert len(lines) == 1, lines
    assert "Retry-After asked this token to wait" in lines[0]
    assert "waits 10 s" in lines[0]
    assert sum(api.sleeps) == pytest.approx(POLICY.max_retry_after, abs=1.0)
    assert len(_warnings(caplog)) == 1, "the requests that waited out the pause logged nothing more"


def test_a_request_whose_deadline_comes_before_the_pause_ends_fails_at_once_naming_the_header(
    sandbox: SandboxServer,
) -> None:
    sandbox.state.inject(Fault.headers(set=_day_ahead(), path="/v1/charts$"))
    sleeps: list[float] = []
    with AnalyticsClient(make_config(sandbox, retry=POLICY), sleep=sleeps.append) as client:
        client.call(endpoints.list_charts())
        with call_deadline(3), pytest.raises(RateLimitedError) as caught:
            client.call(endpoints.list_data_sources())
    assert sleeps == [], "it failed before waiting, not at its deadline"
    text = str(caught.value)
    assert "GET /v1/data-sources" in text
    assert re.search(r"X-RateLimit-Reset asked this token to wait (8599\d|86000) s \(until \d{4}-", text)
    assert "after this call's deadline" in text
    assert caught.value.retry_after == pytest.approx(86_000, abs=5)
    assert [r.path for r in sandbox.state.requests] == ["/v1/charts"]


def test_a_pause_longer_than_this_clients_cap_fails_its_requests_at_once(sandbox: SandboxServer) -> None:
    """Two clients of one token share the limiter; one honours pauses of 100 s, the other of 10 s at most."""
    sandbox.state.inject(Fault.status(429, path="/v1/charts$", retry_after=100))
    patient_sleeps: list[float] = []
    patient = AnalyticsClient(
        make_config(sandbox, retry=RetryPolicy(max_retry_after=300, backoff_initial=0.01)), sleep=patient_sleeps.append
    )
    hasty = AnalyticsClient(make_config(sandbox, retry=POLICY), sleep=lambda seconds: None)
    with patient, hasty:
        patient.call(endpoints.list_charts())  # refused, waits 100 s (instantly here: the pause holds on), answered
        with pytest.raises(RateLimitedError) as caught:
            hasty.call(endpoints.list_data_sources())
    assert "this client waits at most max_retry_after=10 s" in str(caught.value)
    assert "/v1/data-sources" not in [r.path for r in sandbox.state.requests]


def test_a_fleet_refused_with_retry_after_of_years_logs_one_warning_before_anything_is_sent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limiter = RateLimiter("https://api.example.com (connection 'analytics_default')")
    turns = []
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        for i in range(1000):  # a thousand waits, each refused with the same answer
            limiter.refused(999_999_999.0, sent_at=1000.0, now=1000.0 + i * 0.001, max_pause=120)
            turns.append(limiter.take_turn(1000.0 + i * 0.001))
    lines = _warnings(caplog)
    assert len(lines) == 1, lines
    assert "waits 120 s" in lines[0]
    assert "Retry-After asked this token to wait 999999999 s" in lines[0]
    assert "connection 'analytics_default'" in lines[0]
    assert turns[0] is not None
    assert limiter.delay(turns[0], 1001.0) == pytest.approx(120 - 1 + 0.999, abs=0.01), "held for the cap, no longer"


def test_a_short_pause_logs_no_warning(caplog: pytest.LogCaptureFixture) -> None:
    limiter = RateLimiter("x")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        limiter.refused(2.0, sent_at=1000.0, now=1000.0, max_pause=120)
    assert _warnings(caplog) == []


@pytest.mark.parametrize(
    ("fault", "header"),
    [
        (Fault.headers(set=_day_ahead(), path="/v1/charts$"), "X-RateLimit-Reset"),  # a pause already in force
        (Fault.status(429, path="/v1/data-sources$", retry_after=5), "Retry-After"),  # one the call itself meets
    ],
    ids=["in force", "met"],
)
def test_a_call_that_waits_for_no_pause_fails_at_once_naming_the_header(
    sandbox: SandboxServer, fault: Fault, header: str
) -> None:
    """What a sensor that gives its worker slot back asks for: no sleep, however short the pause or far its deadline."""
    sandbox.state.inject(fault)
    sleeps: list[float] = []
    with AnalyticsClient(make_config(sandbox, retry=POLICY), sleep=sleeps.append) as client:
        client.call(endpoints.list_charts())
        with waiting_for_no_pause(), pytest.raises(RateLimitedError) as caught:
            client.call(endpoints.list_data_sources())
        assert client.rate_limiter.pause_in_force(time.monotonic()) is not None, "the pause holds for everyone else"
    assert sleeps == [], "it waited for nothing"
    text = str(caught.value)
    assert f"the platform's {header} asked this token to wait" in text
    assert "this call waits for no pause" in text
    assert [r.path for r in sandbox.state.requests].count("/v1/data-sources") <= 1, "never sent again"
