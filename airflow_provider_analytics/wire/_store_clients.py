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
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.wire.config import RateLimitStore
from airflow_provider_analytics.wire.errors import AnalyticsInputError

if TYPE_CHECKING:
    import redis
    import redis.asyncio

__all__ = [
    "STORE_FAILURES",
    "AsyncStoreLeases",
    "ScriptBatch",
    "blocking_client",
    "close_store_clients",
    "cut_off_after",
    "load_redis",
    "ping",
]

# Connections an asyncio client keeps to the store: a thousand waits of a triggerer asking at once share them (a round
# trip is a fraction of a millisecond, and a loop's calls go in batches), and a command waits for a free one within
# its own deadline. A blocking client opens one per thread that asks at once, up to THREAD_CONNECTIONS: a thread
# that waits for another's connection would count its wait for the GIL as the store's slowness.
POOL_CONNECTIONS = 4
THREAD_CONNECTIONS = 256

# What a store's answer or its failure can raise: the store away, slow, damaged (values out of range, replies nested
# without end), or not Redis at all. Each puts this process on its own limiter (redis-py's own errors come too).
STORE_FAILURES: tuple[type[BaseException], ...] = (
    TimeoutError,
    OSError,
    ValueError,
    TypeError,
    IndexError,
    KeyError,
    AttributeError,
    OverflowError,
    RecursionError,
    UnicodeError,
)

_lock = threading.Lock()
_blocking: dict[RateLimitStore, redis.Redis] = {}
# Per event loop and store: the asyncio client and how many API clients hold it.
_async: dict[tuple[int, RateLimitStore], tuple[asyncio.AbstractEventLoop, redis.asyncio.Redis, int]] = {}


def _pool(redis: Any, store: RateLimitStore, timeout: float, connect_timeout: float, asyncio_pool: bool) -> Any:
    """A connection pool: asyncio, of at most :data:`POOL_CONNECTIONS` connections that a command waits for;
    blocking, one connection per thread asking at once."""
    kinds = redis.asyncio if asyncio_pool else redis
    options: dict[str, Any] = {
        "host": store.host,
        "port": store.port,
        "db": store.db,
        "username": store.username,
        "password": store.password,
        "socket_timeout": timeout,
        "socket_connect_timeout": connect_timeout,
        # One try: a slow or failing store is away, and the limiter paces on its own instead of waiting longer
        # (redis-py 6 and later retry three times by default).
        "retry": (redis.asyncio.retry.Retry if asyncio_pool else redis.retry.Retry)(redis.backoff.NoBackoff(), 0),
        "health_check_interval": 30,
        "connection_class": kinds.Connection,
        # RESP2, which every Redis from 5.0 speaks (and proxies that know no HELLO); redis-py 8 opens with RESP3.
        "protocol": 2,
    }
    if store.ssl:
        options.update(connection_class=kinds.SSLConnection, ssl_cert_reqs=store.ssl_cert_reqs)
        for name in ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile", "ssl_check_hostname"):
            if getattr(store, name) is not None:
                options[name] = getattr(store, name)
    if asyncio_pool:
        return kinds.BlockingConnectionPool(max_connections=POOL_CONNECTIONS, timeout=timeout, **options)
    return kinds.ConnectionPool(max_connections=THREAD_CONNECTIONS, **options)


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


def blocking_client(store: RateLimitStore, timeout: float, connect_timeout: float) -> redis.Redis:
    """The process's blocking client of ``store`` (made on first use, with the timeouts of that use; thread-safe).

    :param store: the store.
    :param timeout: seconds each operation may take (the socket's timeout), and may wait for a free connection.
    :param connect_timeout: seconds a connection may take to open (TCP, TLS).
    """
    client = _blocking.get(store)
    if client is None:
        redis = _import_redis()
        with _lock:
            client = _blocking.get(store)
            if client is None:
                pool = _pool(redis, store, timeout, connect_timeout, False)
                client = _blocking[store] = redis.Redis(connection_pool=pool)
    return client


def cut_off_after(client: redis.Redis, seconds: float, call: Callable[[], Any]) -> Any:
    """``call`` (a command of the blocking ``client``), cut off after ``seconds``.

    A socket's timeout bounds each read, not the reply: a store (or a proxy in front of it) that sends a byte now and
    then would hold the thread as long as it likes. When the time is up, the client's connections are closed, which
    ends the read with an error (those of other threads too: a store that slow is away for them as well).

    :param client: the blocking client ``call`` uses.
    :param seconds: the most the call may take.
    :param call: the command.
    """
    watchdog = threading.Timer(seconds, client.connection_pool.disconnect)
    watchdog.daemon = True
    watchdog.start()
    try:
        return call()
    finally:
        watchdog.cancel()


class AsyncStoreLeases:
    """The asyncio store clients one API client holds, for the event loop it runs in; released by :meth:`aclose`."""

    def __init__(self) -> None:
        self._held: set[tuple[int, RateLimitStore]] = set()

    def client(self, store: RateLimitStore, timeout: float, connect_timeout: float) -> redis.asyncio.Redis:
        """The running loop's client of ``store``, leased to this holder until :meth:`aclose` (made with the timeouts
        of its first use).

        :param store: the store.
        :param timeout: seconds each operation may take.
        :param connect_timeout: seconds a connection may take to open (TCP, TLS).
        """
        loop = asyncio.get_running_loop()
        key = (id(loop), store)
        with _lock:
            for stale in [held for held, entry in _async.items() if entry[0].is_closed()]:
                del _async[stale]  # a loop that ended without its clients closing: let it go (its sockets with it)
            entry = _async.get(key)
            if entry is not None and entry[0] is not loop:  # a closed loop's id, reused: its client is gone
                entry = None
            if entry is None:
                redis = _import_redis()
                pool = _pool(redis, store, timeout, connect_timeout, True)
                entry = (loop, redis.asyncio.Redis(connection_pool=pool), 0)
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
            await entry[1].aclose(close_connection_pool=True)


def ping(store: RateLimitStore, timeout: float) -> str | None:
    """Whether ``store`` answers (a connection of its own, closed after): ``None``, or what went wrong, in words.

    :param store: the store.
    :param timeout: seconds to connect and to answer.
    """
    redis = _import_redis()
    client = redis.Redis(connection_pool=_pool(redis, store, timeout, timeout, False))
    try:
        client.ping()
    except (OSError, TimeoutError, redis.RedisError) as error:
        return f"{type(error).__name__}: {str(error)[:200]}"
    finally:
        client.close()
        client.connection_pool.disconnect()
    return None


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
        client.connection_pool.disconnect()


class ScriptBatch:
    """The store calls of one event loop that wait to go, sent together as one call of the script.

    A triggerer's thousand waits ask the store at once when their polls come due together: one round trip each would
    queue on the client's few connections, and in a busy loop some would wait past their deadline for a store that
    answered at once. Here the calls of a loop go out in batches: the first that asks sends, the others wait for the
    batch they joined; a call given up (its deadline passed) takes nothing from the others.

    :param send: sends one batch: the arguments of each call in it, in order; returns each call's answer, in order
        (or raises the store's error, which every call of the batch is told).
    """

    #: The most calls one batch carries.
    LARGEST = 200

    def __init__(self, send: Callable[[list[list[str]]], Awaitable[list[Any]]]) -> None:
        self._send = send
        self._waiting: list[tuple[list[str], asyncio.Future[Any]]] = []
        self._sender: asyncio.Task[None] | None = None

    async def call(self, args: list[str]) -> Any:
        """This call's answer, sent in the next batch (the caller bounds the wait with its own deadline).

        :param args: its arguments.
        """
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Any] = loop.create_future()
        # A caller that gave up (its deadline) no longer awaits it: its error is read here, not logged by asyncio.
        answer.add_done_callback(_read_outcome)
        self._waiting.append((args, answer))
        if self._sender is None or self._sender.done():
            self._sender = loop.create_task(self._sending())
        return await asyncio.shield(answer)

    async def _sending(self) -> None:
        while self._waiting:
            batch = [(args, answer) for args, answer in self._waiting[: self.LARGEST] if not answer.cancelled()]
            del self._waiting[: self.LARGEST]
            if not batch:
                continue
            try:
                answers = await self._send([args for args, _ in batch])
            except (*STORE_FAILURES, _import_redis().RedisError) as error:  # a reply nested without end, too
                for _, answer in batch:
                    if not answer.done():
                        answer.set_exception(error)
                continue
            for (_, answer), result in zip(batch, answers, strict=False):
                if not answer.done():
                    answer.set_result(result)


def _read_outcome(answer: asyncio.Future[Any]) -> None:
    if not answer.cancelled():
        answer.exception()
