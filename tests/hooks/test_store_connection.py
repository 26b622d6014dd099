"""The rate limit store named by the connection (extra ``rate_limit_redis_conn_id``): read from an Airflow connection of
type ``redis`` as Airflow's Redis provider reads it, by both hooks, with every mistake an input error before any
request, and the store's password never shown."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator

import pytest
from airflow.providers.common.compat.sdk import Connection

from airflow_provider_analytics.connection._store import rate_limit_store_of
from airflow_provider_analytics.hooks.analytics import AnalyticsAsyncHook, AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.support.redis_server import RedisServer
from tests.support.triggers import set_connection

STORE_ENV = "AIRFLOW_CONN_RATE_LIMITS"


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with RedisServer(password="store-pw-4711") as server:
        yield server


def redis_connection(**fields: object) -> Connection:
    return Connection(conn_id="rate_limits", conn_type="redis", **fields)  # type: ignore[arg-type]


def test_the_redis_connection_is_read_as_airflows_redis_provider_reads_it() -> None:
    store = rate_limit_store_of(
        redis_connection(
            host="redis.internal",
            port=6380,
            login="limiter",
            password="pw",
            extra=json.dumps(
                {
                    "db": "3",
                    "ssl": "true",
                    "ssl_cert_reqs": "optional",
                    "ssl_ca_certs": "/ca.pem",
                    "ssl_check_hostname": False,
                }
            ),
        ),
        "analytics_default",
    )
    assert (store.host, store.port, store.db, store.username, store.password) == (
        "redis.internal",
        6380,
        3,
        "limiter",
        "pw",
    )
    assert (store.ssl, store.ssl_cert_reqs, store.ssl_ca_certs, store.ssl_check_hostname) == (
        True,
        "optional",
        "/ca.pem",
        False,
    )
    assert store.address == "rediss://redis.internal:6380/3"
    assert "pw" not in repr(store)
    assert rate_limit_store_of(redis_connection(host="r", password="None"), None).password is None  # as RedisHook


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"host": "r", "conn_type": "postgres"}, "conn_type"),
        ({"host": ""}, "host"),
        ({"host": "r", "port": 70000}, "port"),
        ({"host": "r", "extra": json.dumps({"db": "two"})}, "'db'"),
        ({"host": "r", "extra": json.dumps({"ssl": "maybe"})}, "'ssl'"),
        ({"host": "r", "extra": json.dumps({"ssl": True, "ssl_cert_reqs": "sometimes"})}, "ssl_cert_reqs"),
        # What an outside pass tried: each got past the reading and failed later, untyped, in redis-py or socket.
        ({"host": "red is\x00.internal"}, "host"),
        ({"host": "r", "port": "\u0663\u0663"}, "port"),  # Arabic-Indic digits: int() reads them, a socket does not
        ({"host": "r", "port": "9" * 40}, "port"),
        ({"host": "r", "extra": json.dumps({"db": "1e3"})}, "'db'"),
        ({"host": "r", "password": "pw\ud800"}, "password"),
        ({"host": "r", "login": "user\udfff"}, "login"),
        ({"host": "redis://redis.internal:6379/0"}, "host"),
        ({"host": "redis.internal:6379"}, "host"),
    ],
)
def test_a_redis_connection_that_cannot_be_used_is_an_input_error_naming_both(
    fields: dict[str, object], named: str
) -> None:
    kind = fields.pop("conn_type", "redis")
    try:
        connection = Connection(conn_id="rate_limits", conn_type=kind, **fields)  # type: ignore[arg-type]
    except UnicodeEncodeError:  # Airflow 2.11 encrypts a password as it is set: no connection can hold this one
        pytest.skip(f"this Airflow's Connection cannot hold a {named} that is not UTF-8")
    with pytest.raises(AnalyticsInputError) as caught:
        rate_limit_store_of(connection, "analytics_default")
    assert named in str(caught.value)
    assert "'rate_limits'" in str(caught.value)
    assert "'analytics_default'" in str(caught.value)
    assert "pw" not in str(caught.value)  # never the password, even one that cannot be used


def test_the_connection_test_asks_the_store_and_fails_when_it_does_not_answer(
    monkeypatch: pytest.MonkeyPatch, sandbox: SandboxServer, redis_server: RedisServer
) -> None:
    """A deployment that set a store wants to hear that its fleet does not share a limiter: the test says which
    store answers, and fails naming it when it does not (the password never shown)."""
    set_connection(monkeypatch, sandbox, rate_limit_redis_conn_id="rate_limits")
    monkeypatch.setenv(STORE_ENV, f"redis://:{redis_server.password}@127.0.0.1:{redis_server.port}?db=0")
    ok, message = AnalyticsHook().test_connection()
    assert ok, message
    assert f"the rate limit store redis://127.0.0.1:{redis_server.port}/0 (connection 'rate_limits') answers" in message
    monkeypatch.setenv(STORE_ENV, f"redis://:wrong-pw-0815@127.0.0.1:{redis_server.port}?db=0")
    ok, message = AnalyticsHook().test_connection()
    assert not ok
    assert "Connected to the Analytics Platform" in message
    assert "(connection 'rate_limits') did not answer" in message
    assert "wrong-pw-0815" not in message
    monkeypatch.delenv(STORE_ENV)
    ok, message = AnalyticsHook().test_connection()
    assert not ok
    assert "'rate_limits', which Airflow does not have" in message


def test_a_store_airflow_does_not_have_fails_before_any_request(
    monkeypatch: pytest.MonkeyPatch, sandbox: SandboxServer
) -> None:
    set_connection(monkeypatch, sandbox, rate_limit_redis_conn_id="no_such_redis")
    monkeypatch.delenv(STORE_ENV, raising=False)
    with pytest.raises(AnalyticsInputError, match=r"no_such_redis.*which Airflow does not have"):
        AnalyticsHook().call(endpoints.list_charts())
    assert sandbox.state.requests == []


def test_both_hooks_share_the_limiter_through_the_store_their_connection_names(
    monkeypatch: pytest.MonkeyPatch, sandbox: SandboxServer, redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The worker's hook and the triggerer's both read the Redis connection (JSON form; the URI form too) and keep
    the token's state in it; the store's password never reaches a log line."""
    set_connection(monkeypatch, sandbox, rate_limit_redis_conn_id="rate_limits")
    monkeypatch.setenv(STORE_ENV, f"redis://:{redis_server.password}@127.0.0.1:{redis_server.port}?db=0")
    with caplog.at_level(logging.DEBUG), AnalyticsHook() as hook:
        hook.call(endpoints.list_charts())
        assert hook.client.config.rate_limit_store is not None
        assert hook.client.config.rate_limit_store.password == redis_server.password
    assert redis_server.keys(), "the token's state is in the store"
    monkeypatch.setenv(
        STORE_ENV,
        json.dumps(
            {"conn_type": "redis", "host": "127.0.0.1", "port": redis_server.port, "password": redis_server.password}
        ),
    )

    async def triggerer() -> bool:
        async with AnalyticsAsyncHook() as hook:
            await hook.call(endpoints.list_charts())
            client = await hook.get_client()
            return (
                client.shared_limiter is not None
                and client.shared_limiter.usable(0)
                and bool(client.shared_limiter.epoch)
            )

    assert asyncio.run(triggerer())
    assert redis_server.password
    assert redis_server.password not in caplog.text
    assert "did not answer" not in caplog.text
