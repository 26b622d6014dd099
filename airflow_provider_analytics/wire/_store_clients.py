"""The Redis clients of the rate limit's store (``_shared_limiter.py``): one blocking client per store in a process,
one asyncio client per store and event loop, both from redis-py.

redis-py is imported here, and only when a connection names a store: a process that never uses one never pays for
it, and a deployment without the ``redis`` extra fails only where the store is asked for, with an error that says
what to install. A blocking client (its connection pool) serves every thread and survives a fork (redis-py drops a
parent's connections in the child). An asyncio client belongs to one event loop: the async API clients that use it
hold a lease (:class:`AsyncStoreLeases`) and the last one to close closes it, so no connection outlives its loop.
Every client has short socket timeouts: a slow store is a store that is away (the caller paces on its own).
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.wire.config import RateLimitStore
from airflow_provider_analytics.wire.errors import AnalyticsInputError

if TYPE_CHECKING:
    import redis
    import redis.asyncio

__all__ = ["AsyncStoreLeases", "blocking_client", "close_store_clients", "load_redis"]

# Seconds to connect to the store: beyond it the store is away, and the caller paces on its own.
CONNECT_SECONDS = 0.5

_lock = threading.Lock()
_blocking: dict[RateLimitStore, redis.Redis] = {}
# Per event loop and store: the asyncio client and how many API clients hold it.
_async: dict[tuple[int, RateLimitStore], tuple[asyncio.AbstractEventLoop, redis.asyncio.Redis, int]] = {}


def _redis_options(store: RateLimitStore, timeout: float, retry: Any) -> dict[str, Any]:
    options: dict[str, Any] = {
        "host": store.host,
        "port": store.port,
        "db": store.db,
        "username": store.username,
        "password": store.password,
        "socket_timeout": timeout,
        "socket_connect_timeout": min(timeout, CONNECT_SECONDS),
        # One try: a slow or failing store is away, and the limiter paces on its own instead of waiting longer
        # (redis-py 6 and later retry three times by default).
        "retry": retry,
        "health_check_interval": 30,
    }
    if store.ssl:
        options.update(ssl=True, ssl_cert_reqs=store.ssl_cert_reqs)
        for name in ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile", "ssl_check_hostname"):
            if getattr(store, name) is not None:
                options[name] = getattr(store, name)
    return options


def _import_redis() -> Any:
    try:
        import redis
        import redis.asyncio
        import redis.asyncio.retry
        import redis.backoff
        import redis.retry
    except ImportError:  # the extra is not installed where the store is asked for
        raise AnalyticsInputError(
            "the connection names a rate limit store (extra 'rate_limit_redis_conn_id'), but the Python package "
            "redis is not installed: install airflow-provider-analytics[redis] (or redis>=5) where tasks and "
            "triggers run, or remove the extra"
        ) from None
    return redis


def load_redis() -> None:
    """Import redis-py now (about 0.1 s), when a client that names a store is made: not inside a request's deadline.

    :raises AnalyticsInputError: the package is not installed.
    """
    _import_redis()


def blocking_client(store: RateLimitStore, timeout: float) -> redis.Redis:
    """The process's blocking client of ``store`` (made on first use; thread-safe).

    :param store: the store.
    :param timeout: seconds each operation may take (the socket's timeout).
    """
    client = _blocking.get(store)
    if client is None:
        redis = _import_redis()
        with _lock:
            client = _blocking.get(store)
            if client is None:
                no_retry = redis.retry.Retry(redis.backoff.NoBackoff(), 0)
                client = _blocking[store] = redis.Redis(**_redis_options(store, timeout, no_retry))
    return client


class AsyncStoreLeases:
    """The asyncio store clients one API client holds, for the event loop it runs in; released by :meth:`aclose`."""

    def __init__(self) -> None:
        self._held: set[tuple[int, RateLimitStore]] = set()

    def client(self, store: RateLimitStore, timeout: float) -> redis.asyncio.Redis:
        """The running loop's client of ``store``, leased to this holder until :meth:`aclose`.

        :param store: the store.
        :param timeout: seconds each operation may take.
        """
        loop = asyncio.get_running_loop()
        key = (id(loop), store)
        with _lock:
            entry = _async.get(key)
            if entry is not None and entry[0] is not loop:  # a closed loop's id, reused: its client is gone
                entry = None
            if entry is None:
                redis = _import_redis()
                no_retry = redis.asyncio.retry.Retry(redis.backoff.NoBackoff(), 0)
                entry = (loop, redis.asyncio.Redis(**_redis_options(store, timeout, no_retry)), 0)
            if key not in self._held:
                self._held.add(key)
                entry = (entry[0], entry[1], entry[2] + 1)
            _async[key] = entry
        return entry[1]

    async def aclose(self) -> None:
        """Give back every client held; the last holder of a client closes it."""
        held, self._held = self._held, set()
        for key in held:
            with _lock:
                entry = _async.get(key)
                if entry is None:
                    continue
                if entry[2] > 1:
                    _async[key] = (entry[0], entry[1], entry[2] - 1)
                    continue
                del _async[key]
            await entry[1].aclose()


def close_store_clients() -> None:
    """Close the blocking clients and forget every client (tests, and a process that is done with its stores).

    Asyncio clients are closed by their holders (:meth:`AsyncStoreLeases.aclose`); any left are forgotten.
    """
    with _lock:
        blocking = list(_blocking.values())
        _blocking.clear()
        _async.clear()
    for client in blocking:
        client.close()
