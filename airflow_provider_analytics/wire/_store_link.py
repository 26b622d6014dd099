"""The link to the rate limit's store: the round trips a shared limiter makes (``_shared_limiter.py``), and whether
the store is there.

Each round trip is one operation of the store's script (``_store_script.py``): from a blocking client, one call; from
an event loop, in a batch with the loop's other calls of the moment (``_store_clients.ScriptBatch``). It has a short
deadline inside its call's own, and leaves half of what the call has left for the request itself. A store that fails
a round trip in any way (down, slow, refusing the password, answering what its script never answers, damaged) is
away for :data:`RETRY_SECONDS`: the process paces on its own limiter meanwhile, says so once at WARNING (an outage
within ten minutes of one said is said at INFO), and the first round trip that works afterwards says it is back. The
store's keys never hold the token: they are named by a keyed hash of it (:func:`store_key`).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable, Generator
from typing import Any

from airflow_provider_analytics.wire._deadline import current_call_deadline
from airflow_provider_analytics.wire._pace import CATCH_UP, MIN_RATE, SENT_LOG_MAX, SPAN_SECONDS
from airflow_provider_analytics.wire._recent import ACCEPTED_SECONDS, FULL_SECOND
from airflow_provider_analytics.wire._steps import Reply, Step, StoreCall, StoreFailed
from airflow_provider_analytics.wire._store_clients import (
    STORE_FAILURES,
    AsyncStoreLeases,
    ScriptBatch,
    blocking_client,
    cut_off_after,
    load_redis,
)
from airflow_provider_analytics.wire._store_script import MAX_PAUSE_HELD, SCRIPT, SCRIPT_SHA, one_answer, split_answers
from airflow_provider_analytics.wire.config import RateLimitStore

log = logging.getLogger("airflow_provider_analytics.wire")

__all__ = [
    "HELD_GRACE_SECONDS",
    "LEAST_WAIT_SECONDS",
    "RETRY_SECONDS",
    "STORE_RECHECK_SECONDS",
    "STORE_SECONDS",
    "StoreLink",
    "store_key",
]

# The longest one round trip to the store may take; a store slower than this is away. It is measured in the
# caller's event loop, which a busy triggerer holds for a few hundred milliseconds at times: a store that answered in
# a millisecond must not count as away for that. The first of a process connects (TCP, TLS, AUTH) and loads the
# script too: it may take FIRST_STORE_SECONDS.
STORE_SECONDS = 1.0
FIRST_STORE_SECONDS = 2.0
# A blocking client's round trip cannot be cut shorter than its socket's timeout, so that timeout is short: a thread
# is not held by an event loop, and a store that takes this long for a sub-millisecond script is away. A call whose
# deadline is nearer than this may end that much after it when the store is slow, never later.
BLOCKING_STORE_SECONDS = 0.5
# A blocking round trip's whole reply is cut off this long after its budget (or its socket's timeout, if longer).
WATCHDOG_SLACK_SECONDS = 0.25
# A store call's deadline that fires this much later than it was due was held by a busy event loop, not by the store:
# the call is made again, up to LATE_TRIES times in all (a process starting a thousand waits holds its loop seconds).
LOOP_HELD_SECONDS = 0.1
LATE_TRIES = 3
# What the script answers for one operation (anything else is a store that is not running it).
ANSWERS = frozenset({"go", "wait", "void", "ok", "stale", "peek"})
# The least a turn told to wait sleeps before it asks again: a store that says "wait 0" cannot make it spin.
LEAST_WAIT_SECONDS = 0.05
# A turn that waits asks the store again at least this often (a pace learnt meanwhile may bring it forward): each
# look is a round trip, so less often than a process's own limiter looks at its queue.
STORE_RECHECK_SECONDS = 3.0
# A waiting turn whose asker has not asked again this long after the store told it to is given up (its process died
# or was stopped): long enough for a triggerer's event loop that lags, short enough that a restarted triggerer's
# queued waits do not each hold a turn of the fleet's pace.
HELD_GRACE_SECONDS = 10.0
# After an outage was said at WARNING, the next ones within this long are said at DEBUG: a store that comes and goes
# logs one WARNING (and one INFO when it is back) per process in this time, not two lines per flap.
WARN_AGAIN_SECONDS = 600.0
# After the store failed, this process paces on its own for this long before it asks the store again.
RETRY_SECONDS = 5.0
# Keys of an account nobody used for this long expire.
TTL_MS = 3_600_000


def store_key(base_url: str, token: str) -> str:
    """The name an account's keys carry in the store: a slow hash of the token (scrypt), never the token.

    Anyone who reads the store (a neighbour on the deployment's Redis) sees the name; any name derived from the token
    alone lets them test a guess of it offline. A fast keyed hash (HMAC) tested a list of weak tokens in a
    millisecond; scrypt (2^14 rounds, 16 MiB) makes each guess cost what it costs here, once per account and process
    when its first client is made (tens of milliseconds), so a token from a leaked list is still found but not a
    random one of any length. The base URL salts it: one token on two platforms keeps two limits.

    :param base_url: the client's base URL.
    :param token: its token.
    """
    salt = b"analytics-platform rate limit\0" + base_url.encode()
    return hashlib.scrypt(token.encode(), salt=salt, n=2**14, r=8, p=1, dklen=16).hex()


class StoreLink:
    """The round trips of one account's shared limiter to its store (see the module's docstring).

    :param store: the store.
    :param key: the account's name in it (:func:`store_key`).
    :param name: how log lines name the account.
    """

    def __init__(self, store: RateLimitStore, key: str, name: str) -> None:
        load_redis()  # here, when the client is made: never inside a request's deadline
        self.store = store
        self.name = name
        prefix = f"analytics-platform:limiter:{{{key}}}"
        self.keys = (f"{prefix}:state", f"{prefix}:sends", f"{prefix}:gone", f"{prefix}:held", f"{prefix}:refused")
        self.offset = 0.0  # the store's clock minus this process's monotonic clock
        self._away_until = 0.0
        self._away_since: float | None = None
        self._answered = False  # no round trip has worked yet: the first one may also connect
        self._warned_at = -WARN_AGAIN_SECONDS  # when an outage was last said at WARNING
        self._unsaid = 0  # outages since then, said at DEBUG only
        self._constants = [str(TTL_MS), str(MIN_RATE), str(SPAN_SECONDS), str(SENT_LOG_MAX), str(STORE_RECHECK_SECONDS)]
        self._constants += [str(MAX_PAUSE_HELD), str(HELD_GRACE_SECONDS), str(CATCH_UP)]
        self._constants += [str(ACCEPTED_SECONDS), str(FULL_SECOND)]
        self._batches: dict[int, tuple[asyncio.AbstractEventLoop, ScriptBatch]] = {}
        self._leases: AsyncStoreLeases | None = None
        self._where = store.address + (f" (connection {store.connection_id!r})" if store.connection_id else "")

    @property
    def where(self) -> str:
        """The store as log lines name it: its address and its Airflow connection, never its password."""
        return self._where

    def usable(self, now: float) -> bool:
        """Whether requests go through the store now (else through this process's own limiter): it is not away.

        :param now: monotonic seconds.
        """
        return now >= self._away_until

    def round_trip(
        self, argv: list[str]
    ) -> Generator[Step, Reply, tuple[tuple[str, int | None, float, float], dict[str, str], float] | None]:
        """One operation of the store's script, within its deadline: its answer (status, turn, a number, the store's
        clock), the state's fields and the store's clock; ``None`` (the store is away) on any failure.

        A round trip that ran out of the call's own time (cut to half of what the call had left) is not the store's
        fault: it answers ``None`` too, but the store is not away (:meth:`away` tells them apart).

        :param argv: the operation's name and its arguments.
        """
        started = time.monotonic()
        operation = [argv[0], str(len(argv) - 1), *argv[1:]]
        allowed = STORE_SECONDS if self._answered else FIRST_STORE_SECONDS
        budget = allowed
        call_deadline = current_call_deadline()
        if call_deadline is not None:  # the round trip counts in the call's own deadline, and leaves half of it
            budget = min(allowed, (call_deadline - started) / 2)
            if budget <= 0:
                return None
        reply = yield StoreCall(self._blocking(operation), self._awaiting(operation), budget)
        finished = time.monotonic()
        try:
            if isinstance(reply, StoreFailed):
                raise reply.error
            answer, fields, store_now = one_answer(reply)
            if answer[0] not in ANSWERS or (answer[0] == "wait" and answer[1] is None):
                raise ValueError(f"the store answered {answer[0][:40]!r}, which its script never answers")
        except (*STORE_FAILURES, _redis_error()) as error:  # the store away, slow, damaged, or not Redis at all
            if budget < allowed and finished - started >= budget and _timed_out(error):
                return None  # the call's time ran out, not the store's
            self.went_away(finished, error)
            return None
        self.offset = store_now - (started + finished) / 2
        self._answered = True
        if self._away_since is not None and started >= self._away_until:  # not a round trip begun before it failed
            self._back(finished)
        return answer, fields, store_now

    def _script(self, client: Any, operations: list[list[str]]) -> Any:
        """Call the script with ``operations`` (blocking or awaitable, as ``client`` is)."""
        args = [*self._constants, *(item for operation in operations for item in operation)]
        return client.evalsha(SCRIPT_SHA, len(self.keys), *self.keys, *args)

    def _blocking(self, operation: list[str]) -> Callable[[float], Any]:
        def script(client: Any) -> Any:
            try:
                return self._script(client, [operation])
            except _redis_module().exceptions.NoScriptError:  # a new or restarted store: load it once
                client.script_load(SCRIPT)
                return self._script(client, [operation])

        def call(seconds: float) -> Any:
            try:
                client = blocking_client(self.store, BLOCKING_STORE_SECONDS, FIRST_STORE_SECONDS)
                # The socket's timeout bounds each read; the watchdog bounds the reply (a store that trickles bytes).
                return cut_off_after(client, max(seconds, BLOCKING_STORE_SECONDS) + WATCHDOG_SLACK_SECONDS,
                                     lambda: script(client))  # fmt: skip
            except (*STORE_FAILURES, _redis_error()) as error:  # a read cut off mid-reply may raise anything here
                return StoreFailed(error)

        return call

    def _awaiting(self, operation: list[str]) -> Callable[[Any, float], Any]:
        async def call(leases: AsyncStoreLeases, seconds: float) -> Any:
            loop = asyncio.get_running_loop()
            batch = self._batch(loop, leases)
            for attempt in range(1, LATE_TRIES + 1):
                deadline = loop.time() + seconds
                try:
                    async with asyncio.timeout_at(deadline):
                        return await batch.call(operation)
                except TimeoutError as error:
                    # A deadline that fired late was held by the event loop (a busy triggerer), not by the store: its
                    # answer may be waiting unread. One more try tells a busy loop from a store that is away.
                    if attempt == LATE_TRIES or loop.time() - deadline < LOOP_HELD_SECONDS:
                        return StoreFailed(error)
                except (*STORE_FAILURES, _redis_error()) as error:
                    return StoreFailed(error)
            return StoreFailed(TimeoutError())  # pragma: no cover - the loop returns in its last try

        return call

    def _batch(self, loop: asyncio.AbstractEventLoop, leases: AsyncStoreLeases) -> ScriptBatch:
        """The loop's batch of store calls (made on first use; a loop that ended leaves its batch behind)."""
        self._leases = leases  # a client that holds this loop's store client, to send with
        held = self._batches.get(id(loop))
        if held is not None and held[0] is loop:
            return held[1]

        async def send(operations: list[list[str]]) -> list[Any]:
            holder = self._leases or leases
            client = holder.client(self.store, FIRST_STORE_SECONDS, FIRST_STORE_SECONDS)  # each call has its own
            try:
                reply = await self._script(client, operations)
            except _redis_module().exceptions.NoScriptError:  # a new or restarted store: load it once
                await client.script_load(SCRIPT)
                reply = await self._script(client, operations)
            return split_answers(reply, len(operations))

        batch = ScriptBatch(send)
        self._batches = {key: value for key, value in self._batches.items() if not value[0].is_closed()}
        self._batches[id(loop)] = (loop, batch)
        return batch

    def away(self, now: float) -> bool:
        """Whether the store is away now (a round trip failed less than :data:`RETRY_SECONDS` ago).

        :param now: monotonic seconds.
        """
        return now < self._away_until

    def went_away(self, now: float, error: BaseException) -> None:
        """A round trip failed: pace on this process's own limiter for :data:`RETRY_SECONDS`.

        Said once per outage, at WARNING the first time in :data:`WARN_AGAIN_SECONDS` and else at DEBUG (a store
        that comes and goes logs two lines per process in that time, however often it flaps; the next line counts
        the outages it did not say).

        :param now: monotonic seconds.
        :param error: what failed.
        """
        self._away_until = max(self._away_until, now + RETRY_SECONDS)
        if self._away_since is not None:  # a round trip begun before the outage was seen
            return
        self._away_since = now
        if now - self._warned_at < WARN_AGAIN_SECONDS:
            self._unsaid += 1
            log.debug("The rate limit store %s did not answer again (%s)", self._where, type(error).__name__)
            return
        self._warned_at, unsaid, self._unsaid = now, self._unsaid, 0
        log.warning(
            "The rate limit store %s did not answer (%s: %s): this process paces its requests on the token at %s on "
            "its own, and asks the store again every %.0f s%s",
            self._where,
            type(error).__name__,
            str(error)[:200],
            self.name,
            RETRY_SECONDS,
            f" (it was away {unsaid} more times since this was last said)" if unsaid else "",
        )

    def _back(self, now: float) -> None:
        """A round trip worked after an outage: said at INFO after an outage said at WARNING, else at DEBUG."""
        away_for, self._away_since = now - (self._away_since or now), None
        level = logging.INFO if self._unsaid == 0 else logging.DEBUG
        log.log(
            level,
            "The rate limit store %s answers again: this process's requests on the token at %s take their turns "
            "through it again (it paced them on its own for %.0f s)",
            self._where,
            self.name,
            away_for,
        )


def _timed_out(error: BaseException) -> bool:
    return isinstance(error, (TimeoutError, _redis_module().exceptions.TimeoutError))


def _redis_module() -> Any:
    import redis

    return redis


def _redis_error() -> type[BaseException]:
    return _redis_module().RedisError  # type: ignore[no-any-return]
