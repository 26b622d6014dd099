"""The I/O steps a call is made of, which the retry loop (``_core.py``) yields and each client carries out.

The retry loop does no I/O itself: it yields a :class:`Send` (this request, by this deadline), a :class:`Sleep`, or
a :class:`StoreCall` (a round trip to the store a fleet's rate limiter shares, ``_shared_limiter.py``), and is sent
back what came of it (:data:`Reply`). :mod:`~airflow_provider_analytics.wire.client` carries them out, once with
``await`` and once without, as httpx's own clients share ``BaseClient``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeAlias

import httpx

__all__ = ["Answer", "Exchange", "Reply", "Send", "Sleep", "Step", "StoreCall", "StoreFailed"]


@dataclass(frozen=True)
class Send:
    """Step: send ``request`` and have its answer back by ``deadline`` (a :func:`time.monotonic` time).

    With ``stream`` a successful answer's body is left unread; any other body is read, within the client's
    ``body_reader`` bound.
    """

    request: httpx.Request
    deadline: float
    stream: bool = False


@dataclass(frozen=True)
class Sleep:
    """Step: wait before the next attempt (or the next look at the queue)."""

    seconds: float


@dataclass(frozen=True)
class StoreCall:
    """Step: one round trip to the rate limit's store, within ``timeout`` seconds.

    The step carries both ways of making it: a blocking client calls :attr:`blocking` (the process's one blocking
    store client serves every thread), an asyncio client awaits :attr:`awaiting` with the store clients it holds
    for its event loop (``_store_clients.AsyncStoreLeases``: closed with the client).
    """

    blocking: Callable[[float], Any]
    awaiting: Callable[[Any, float], Awaitable[Any]]
    timeout: float


@dataclass(frozen=True)
class StoreFailed:
    """What a store call that failed hands back (the store unreachable, slow, or answering nonsense).

    :param error: the exception, kept for the one log line that says the store went away.
    """

    error: BaseException


@dataclass(frozen=True)
class Answer:
    """An HTTP answer and its decoded body (``None`` while a streamed body is still unread)."""

    response: httpx.Response
    body: bytes | None


Step: TypeAlias = Send | Sleep | StoreCall
# What a driver hands back for a step: a Send's answer or its transport error, a StoreCall's result or failure.
Reply: TypeAlias = Answer | httpx.TransportError | StoreFailed | Any | None
Exchange: TypeAlias = Generator[Step, Reply, Answer]
