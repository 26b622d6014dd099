"""The rate limit's store is never a new way to fail: a real ``redis-server`` that is down, stopped, frozen, flushed
or refuses the password, and requests that go on, each process pacing on its own, with one WARNING per outage."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator

import pytest

from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._deadline import call_deadline
from airflow_provider_analytics.wire._store_link import RETRY_SECONDS, STORE_SECONDS
from airflow_provider_analytics.wire.client import AnalyticsClient, AsyncAnalyticsClient
from airflow_provider_analytics.wire.config import RateLimitStore
from airflow_provider_analytics.wire.errors import RateLimitedError
from tests.support.fixtures import make_config
from tests.support.redis_server import RedisServer, free_port

WIRE = "airflow_provider_analytics.wire"


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def warnings_about_the_store(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "rate limit store" in r.getMessage()
    ]


def test_a_store_that_never_answers_leaves_each_process_pacing_on_its_own(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    store = RateLimitStore(host="127.0.0.1", port=free_port(), connection_id="rate_limits")  # nothing listens
    sandbox.state.inject(Fault.status(429, path="/v1/charts$", retry_after=1))
    with caplog.at_level(logging.INFO, logger=WIRE), AnalyticsClient(make_config(sandbox, rate_limit_store=store)) as c:
        started = time.monotonic()
        c.call(endpoints.list_charts())  # refused once, then sent again after the pause its own limiter holds
        for _ in range(5):
            c.call(endpoints.list_data_sources())
        assert c.rate_limiter.snapshot()["refused"] == 1
    assert time.monotonic() - started < 10  # a bound against a hang, not a speed claim
    lines = warnings_about_the_store(caplog)
    assert len(lines) == 1, lines  # one per outage, not one per request
    assert "did not answer" in lines[0]
    assert "paces its requests on the token" in lines[0]
    assert "connection 'rate_limits'" in lines[0]


def test_a_store_that_goes_down_and_comes_back_is_left_and_rejoined(
    sandbox: SandboxServer, redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    store = RateLimitStore(host="127.0.0.1", port=redis_server.port, connection_id="rate_limits")
    with caplog.at_level(logging.INFO, logger=WIRE), AnalyticsClient(make_config(sandbox, rate_limit_store=store)) as c:
        c.call(endpoints.list_charts())
        assert c.shared_limiter is not None
        assert c.shared_limiter.usable(time.monotonic())
        redis_server.stop()
        started = time.monotonic()
        for _ in range(3):
            c.call(endpoints.list_charts())
        assert time.monotonic() - started < 3 * STORE_SECONDS + 2  # one round trip's budget, then none
        assert not c.shared_limiter.usable(time.monotonic())
        redis_server.start()  # back, empty, on the same port
        time.sleep(RETRY_SECONDS + 0.2)
        c.call(endpoints.list_charts())
        assert c.shared_limiter.usable(time.monotonic())
    assert len(warnings_about_the_store(caplog)) == 1
    back = [r.getMessage() for r in caplog.records if "answers again" in r.getMessage()]
    assert len(back) == 1
    assert redis_server.keys(), "the rejoined process keeps its state in the store again"


def test_a_frozen_store_costs_a_call_no_more_than_its_deadline(
    sandbox: SandboxServer, redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A store that holds its connections and answers nothing (SIGSTOP): the call goes on its own limiter after one
    round trip's budget, inside its own deadline, on both transports."""
    store = RateLimitStore(host="127.0.0.1", port=redis_server.port, connection_id="rate_limits")
    config = make_config(sandbox, rate_limit_store=store)

    async def through_a_trigger() -> float:
        async with AsyncAnalyticsClient(config) as client:
            await client.call(endpoints.list_charts())  # connected, and the store answered
            redis_server.freeze()
            try:
                started = time.monotonic()
                with call_deadline(5.0):
                    await client.call(endpoints.list_charts())
                return time.monotonic() - started
            finally:
                redis_server.thaw()

    with caplog.at_level(logging.WARNING, logger=WIRE):
        took = asyncio.run(through_a_trigger())
    assert took < 3.0  # one round trip's budget (1 s), then the request: well inside the 5 s
    assert len(warnings_about_the_store(caplog)) == 1


@pytest.mark.analytics_sandbox(rate_limit=5, rate_limit_headers=False)
def test_a_store_flushed_while_its_queue_waits_gives_every_request_a_new_place(
    sandbox: SandboxServer, redis_server: RedisServer
) -> None:
    store = RateLimitStore(host="127.0.0.1", port=redis_server.port, connection_id="rate_limits")
    # One refusal for certain (5 requests a second are not always sent within a second on a busy machine).
    sandbox.state.inject(Fault.status(429, path="/v1/charts", times=1, retry_after=1))
    with AnalyticsClient(make_config(sandbox, rate_limit_store=store)) as client:
        for _ in range(3):  # refused at the first: the fleet now paces through the store
            client.call(endpoints.list_charts())
        assert client.shared_limiter is not None
        assert client.shared_limiter.learned.throttled
        redis_server.flush()  # as a restart without persistence does
        for _ in range(3):
            client.call(endpoints.list_charts())
        assert client.shared_limiter.usable(time.monotonic()), "a flushed store is a store that answers"
    assert redis_server.keys()


def test_a_store_that_refuses_the_password_never_shows_it(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    with RedisServer(password="correct-horse") as server:
        store = RateLimitStore(host="127.0.0.1", port=server.port, password="wrong-battery", connection_id="limits")
        with (
            caplog.at_level(logging.INFO, logger=WIRE),
            AnalyticsClient(make_config(sandbox, rate_limit_store=store)) as client,
        ):
            client.call(endpoints.list_charts())
        assert "wrong-battery" not in repr(store)
    lines = warnings_about_the_store(caplog)
    assert len(lines) == 1
    assert "wrong-battery" not in caplog.text
    assert "correct-horse" not in caplog.text


def test_a_store_whose_state_was_damaged_neither_stops_the_fleet_nor_lets_it_rush(
    sandbox: SandboxServer, redis_server: RedisServer
) -> None:
    """A store written by something else (or damaged): a pause of decades, a pace of zero, a cap of millions. The
    state is read like an answer, within bounds: a pause longer than the call may wait fails it at once, as a
    platform's would; once the pause is gone the queue goes again at once, and the cap is held to a bound."""
    store = RateLimitStore(host="127.0.0.1", port=redis_server.port, connection_id="rate_limits")
    config = make_config(sandbox, rate_limit_store=store)
    with AnalyticsClient(config) as client:
        client.call(endpoints.list_charts())  # the state exists
        assert client.shared_limiter is not None
        state = client.shared_limiter.keys[0]
        with redis_server.client() as raw:
            now = float(raw.time()[0])
            damage = {"th": "1", "pu": str(now + 1e9), "ph": "Retry-After", "pa": "1e9", "pcap": "1e9", "r": "0"}
            raw.hset(state, mapping={**damage, "qr": "0", "hc": "1e12", "w": "-5", "c": "nan"})
            started = time.monotonic()
            with pytest.raises(RateLimitedError), call_deadline(5.0):
                client.call(endpoints.list_charts())
            assert time.monotonic() - started < 2.0, "the pause past the deadline failed the call at once"
            raw.hset(state, mapping={"pu": "0", "ph": ""})
        started = time.monotonic()
        with call_deadline(10.0):
            client.call(endpoints.list_charts())  # not held by the schedule the pause left behind
        assert time.monotonic() - started < 10.0
        learned = client.shared_limiter.learned
        assert learned.rate >= 0.5
        assert learned.header_cap is not None
        assert learned.header_cap <= 1_000_000
        assert learned.window is not None
        assert learned.window > 0
