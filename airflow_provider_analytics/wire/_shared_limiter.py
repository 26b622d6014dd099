"""One rate limiter for every process on a token, kept in a store they all reach (Redis), as octokit's throttling
plugin clusters its limiter through Redis: the learnt pace, every pause and the queue's order are shared, so a fleet
of workers and triggerers on one token asks the platform for what it allows, and its waits are served in turn.

What is learnt, and how, is ``_learning.py``'s, the same as a process's own limiter (``_throttle.py``): here the
state lives in the store, each process reads it with every round trip, and writes what it learnt only if nothing
was learnt meanwhile (a version check; on a clash it learns again from the newer state). The queue is the store's
script (``_store_script.py``). Each request costs one round trip to take its turn (and one per look while it waits);
an answer whose headers change nothing costs none.

**The store is never a new way to fail.** Every round trip has a short deadline inside the request's own. A store
that does not answer (down, slow, unreachable, refusing the password) puts this process on its own limiter
(``_throttle.RateLimiter``, which learns from every answer all along, so it is warm) for :data:`RETRY_SECONDS`, with
one WARNING per outage; the first round trip that works afterwards rejoins, with one INFO line. A store that lost
its state (flushed, restarted) starts a new queue: waiting turns take new places. The store's keys never hold the
token: they are named by a keyed hash of it (:func:`store_key`), so one store serves several tokens apart.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import math
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from airflow_provider_analytics.wire._deadline import current_call_deadline
from airflow_provider_analytics.wire._learning import Change, Learned
from airflow_provider_analytics.wire._observer import PauseSource, observer
from airflow_provider_analytics.wire._pace import MIN_RATE, SENT_LOG_MAX, SPAN_SECONDS
from airflow_provider_analytics.wire._rate_headers import Pause, RateHeaders
from airflow_provider_analytics.wire._recent import LastSecondCount
from airflow_provider_analytics.wire._steps import Reply, Sleep, Step, StoreCall, StoreFailed
from airflow_provider_analytics.wire._store_clients import AsyncStoreLeases, blocking_client, load_redis
from airflow_provider_analytics.wire._store_script import SCRIPT, SCRIPT_SHA, differs, fields_of, learned_from
from airflow_provider_analytics.wire._throttle import RateLimiter
from airflow_provider_analytics.wire.config import RateLimitStore

log = logging.getLogger("airflow_provider_analytics.wire")

__all__ = ["RETRY_SECONDS", "STORE_SECONDS", "SharedLimiter", "SharedTurn", "store_key"]

# The longest one round trip to the store may take; a store slower than this is away. It is measured in the
# caller's event loop, which a busy triggerer holds for a few hundred milliseconds at times: a store that answered in
# a millisecond must not count as away for that. The first of a process connects (TCP, TLS, AUTH) and loads the
# script too: it may take FIRST_STORE_SECONDS.
STORE_SECONDS = 1.0
FIRST_STORE_SECONDS = 2.0
# A turn that waits asks the store again at least this often (a pace learnt meanwhile may bring it forward): each
# look is a round trip, so less often than a process's own limiter looks at its queue.
STORE_RECHECK_SECONDS = 3.0
# After an outage was said at WARNING, the next ones within this long are said at INFO: a store that comes and goes
# logs one WARNING per process, not one per flap.
WARN_AGAIN_SECONDS = 600.0
# After the store failed, this process paces on its own for this long before it asks the store again.
RETRY_SECONDS = 5.0
# Keys of an account nobody used for this long expire.
TTL_MS = 3_600_000
# A request sent this close to its call's deadline does not spend any of it on the store.
LEAST_SECONDS = 0.05


@dataclass(frozen=True)
class SharedTurn:
    """A request's place in the queue a fleet shares.

    :param number: the turn's number in the store's queue.
    :param epoch: the queue's incarnation it was taken in (a flushed store starts another).
    :param asked_at: when it was taken, by the store's clock.
    :param sent_at: when it was let go, by the store's clock (0 until then).
    """

    number: int
    epoch: str
    asked_at: float
    sent_at: float = 0.0


def store_key(base_url: str, token: str) -> str:
    """The name an account's keys carry in the store: a keyed hash of the token, never the token.

    Keyed by the token itself, so that nobody who reads the store can test a guess of a token against it without
    the token; the base URL is the message, so one token on two platforms keeps two limits.

    :param base_url: the client's base URL.
    :param token: its token.
    """
    digest = hmac.new(token.encode(), b"analytics-platform rate limit\0" + base_url.encode(), hashlib.sha256)
    return digest.hexdigest()[:32]


class SharedLimiter:
    """The limiter every process on one account shares through ``store`` (see the module's docstring).

    :param store: where the shared state lives.
    :param key: the account's name in the store (:func:`store_key`).
    :param local: this process's own limiter of the account: it learns from every answer too, and paces alone
        while the store is away.
    """

    def __init__(self, store: RateLimitStore, key: str, local: RateLimiter) -> None:
        load_redis()  # here, when the client is made: never inside a request's deadline
        self.store = store
        self.local = local
        self.keys = (f"analytics-platform:limiter:{{{key}}}:state", f"analytics-platform:limiter:{{{key}}}:sends")
        self.learned = Learned()  # the state as the last round trip found it
        self.version = ""
        self.epoch = ""
        self.queued = 0
        self._offset = 0.0  # the store's clock minus this process's monotonic clock
        self._away_until = 0.0
        self._away_since: float | None = None
        self._answered = False  # no round trip has worked yet: the first one may also connect
        self._warned_at = -WARN_AGAIN_SECONDS  # when an outage was last said at WARNING
        self._sent = LastSecondCount()  # this process's sends, for its share of the fleet's pace
        self._announced_since: float | None = None
        self._where = store.address + (f" (connection {store.connection_id!r})" if store.connection_id else "")

    # What the retry loop asks ---------------------------------------------------------------------------

    def usable(self, now: float) -> bool:
        """Whether requests go through the store now (else through this process's own limiter).

        :param now: monotonic seconds.
        """
        return now >= self._away_until

    def wait_for_turn(
        self, kept: SharedTurn | None, checks: Callable[[float, float, Pause | None], None]
    ) -> Generator[Step, Reply, SharedTurn | None]:
        """Take a turn in the fleet's queue (or keep ``kept``) and wait until it comes; ``None``: the store is away.

        :param kept: the turn of a request that was just refused: it keeps its place.
        :param checks: called before each wait with (now, the wait, the pause holding it): raises when the wait
            must not be waited (past the call's deadline, or a pause longer than the client allows).
        """
        paced = kept is not None and kept.number >= 0  # an unpaced request refused takes a new turn
        argv = ["take", str(kept.number) if paced and kept else "", kept.epoch if paced and kept else ""]
        answer = yield from self._round_trip(argv)
        while answer is not None:
            status, turn, delay, store_now = answer
            if status == "void":  # the store lost its queue: take a place in the new one
                answer = yield from self._round_trip(["take", "", ""])
                continue
            if status == "go":
                now = time.monotonic()
                self._sent.add(now)
                if turn is not None:  # a paced send: the gauges follow the fleet's pace
                    self._announce(store_now)
                    observer().limiter(self.local.account, self.learned.rate, self.queued, "store", self.share(now))
                    return SharedTurn(turn, self.epoch, kept.asked_at if kept else store_now, store_now)
                return SharedTurn(-1, self.epoch, store_now, store_now)
            now = time.monotonic()
            paused_by = self.pause_in_force(now)
            # The store's word on the wait is held to what the state it holds allows: the pause (itself bounded)
            # or a second, after which the turn asks again.
            delay = min(delay, max(STORE_RECHECK_SECONDS, paused_by.until - now if paused_by else 0.0))
            checks(now, delay, paused_by)
            asked_at = kept.asked_at if kept else store_now
            kept = SharedTurn(turn if turn is not None else -1, self.epoch, asked_at)
            yield from self._sleep(delay)
            hint = max(MIN_RATE, self.learned.paced(time.monotonic() + self._offset)) if self.learned.throttled else 0
            answer = yield from self._round_trip(
                ["check", str(kept.number), kept.epoch, f"{asked_at:.6f}", f"{hint:.6f}", self.version]
            )
        return None

    def answered(
        self, status: int, headers: Mapping[str, str], now: float, max_pause: float
    ) -> Generator[Step, Reply, None]:
        """Learn from an answer (not a 429): the headers may change the shared state; this process's own limiter
        learns from it too.

        :param status: the answer's status.
        :param headers: its headers.
        :param now: monotonic seconds.
        :param max_pause: the longest pause held (the retry policy's ``max_retry_after``).
        """
        self.local.answered(status, headers, now, max_pause)
        if "X-RateLimit-Limit" not in headers or not self.usable(now):
            return
        wall = time.time()
        rate_headers = RateHeaders.parse(headers, wall)
        if rate_headers is None:
            return
        for _ in range(3):  # a clash: another process learnt meanwhile; learn again from what it wrote
            learned = replace(self.learned)
            change = learned.headers_seen(rate_headers, status < 400, now + self._offset, wall, max_pause)
            if not change.ops and not differs(self.learned, learned):
                return
            if (yield from self._update(learned, change)) is not False:
                return

    def refused(
        self, pause: float, turn: SharedTurn, now: float, max_pause: float, source: PauseSource
    ) -> Generator[Step, Reply, None]:
        """A 429: pause the fleet's requests, and cut the fleet's pace unless this refusal is an echo.

        :param pause: seconds to pause: the answer's ``Retry-After``, or a backoff when it had none.
        :param turn: the refused request's turn (when it was sent, by the store's clock).
        :param now: monotonic seconds.
        :param max_pause: the longest pause held.
        :param source: what asked for the pause.
        """
        self.local.refused(pause, turn.sent_at - self._offset, now, max_pause, source)
        peek = yield from self._round_trip(["peek"])
        if peek is None:
            return
        came_at = peek[2]
        for _ in range(3):
            learned = replace(self.learned)
            store_now = time.monotonic() + self._offset
            change = learned.refused(pause, turn.sent_at, store_now, max_pause, source, came_at, time.time())
            if (yield from self._update(learned, change)) is not False:
                return

    def pause_in_force(self, now: float) -> Pause | None:
        """The pause holding the fleet's requests now (by this process's clock), or ``None``.

        :param now: monotonic seconds.
        """
        paused_by = self.learned.pause_in_force(now + self._offset)
        return None if paused_by is None else replace(paused_by, until=paused_by.until - self._offset)

    def expected_wait(self, now: float) -> float:
        """Seconds a request asking now would wait for its turn, as the last round trip saw the queue.

        :param now: monotonic seconds.
        """
        if not self.usable(now):
            return self.local.expected_wait(now)
        if not self.learned.throttled:
            return 0.0
        return max(0.0, self.learned.pause_until - now - self._offset) + self.queued / max(MIN_RATE, self.learned.rate)

    def share(self, now: float) -> float:
        """This process's part of the fleet's pace: its sends in the last second over that pace.

        :param now: monotonic seconds.
        """
        return min(1.0, self._sent.total(now) / max(MIN_RATE, self.learned.rate)) if self.learned.throttled else 1.0

    # Round trips ----------------------------------------------------------------------------------------

    def _round_trip(self, argv: list[str]) -> Generator[Step, Reply, tuple[str, int | None, float, float] | None]:
        """One call of the store's script, within its deadline; ``None`` (the store is away) on any failure."""
        started = time.monotonic()
        constants = [str(TTL_MS), str(MIN_RATE), str(SPAN_SECONDS), str(SENT_LOG_MAX), str(STORE_RECHECK_SECONDS)]
        args = [argv[0], *constants, *argv[1:]]
        budget = STORE_SECONDS if self._answered else FIRST_STORE_SECONDS
        call_deadline = current_call_deadline()
        if call_deadline is not None:  # the round trip counts in the call's own deadline
            budget = max(0.001, min(budget, call_deadline - started))
        reply = yield StoreCall(self._blocking(args), self._awaiting(args), budget)
        finished = time.monotonic()
        try:
            if isinstance(reply, StoreFailed):
                raise reply.error
            answer = self._read(reply, (started + finished) / 2)
        except (TimeoutError, OSError, ValueError, TypeError, IndexError, _redis_error()) as error:
            self._went_away(finished, error)
            return None
        self._answered = True
        if self._away_since is not None:
            log.log(
                logging.INFO,
                "The rate limit store %s answers again: this process's requests on the token at %s take their "
                "turns through it again (it paced them on its own for %.0f s)",
                self._where,
                self.local.name,
                finished - self._away_since,
            )
            self._away_since = None
        return answer

    def _blocking(self, args: list[str]) -> Callable[[float], Any]:
        def call(seconds: float) -> Any:
            client = blocking_client(self.store, seconds)
            try:
                return client.evalsha(SCRIPT_SHA, 2, *self.keys, *args)
            except _redis_module().exceptions.NoScriptError:  # a new or restarted store: load it once
                return client.eval(SCRIPT, 2, *self.keys, *args)
            except (TimeoutError, OSError, _redis_error()) as error:
                return StoreFailed(error)

        return call

    def _awaiting(self, args: list[str]) -> Callable[[Any, float], Any]:
        async def call(leases: AsyncStoreLeases, seconds: float) -> Any:
            try:
                client = leases.client(self.store, seconds)
                async with asyncio.timeout(seconds):
                    try:
                        return await client.evalsha(SCRIPT_SHA, 2, *self.keys, *args)
                    except _redis_module().exceptions.NoScriptError:
                        return await client.eval(SCRIPT, 2, *self.keys, *args)
            except (TimeoutError, OSError, _redis_error()) as error:
                return StoreFailed(error)

        return call

    def _read(self, reply: Any, local_now: float) -> tuple[str, int | None, float, float]:
        """The script's answer: (status, turn, delay, the store's clock), the state refreshed from it."""
        if not isinstance(reply, list) or len(reply) < 4 or len(reply) % 2:
            raise ValueError(f"the store answered {type(reply).__name__}, not the script's list")
        text = [item.decode() if isinstance(item, bytes) else str(item) for item in reply]
        status, turn, delay, store_now = text[0], text[1], float(text[2]), float(text[3])
        if not math.isfinite(store_now) or not math.isfinite(delay):
            raise ValueError("the store answered a time that is not a number")
        self._offset = store_now - local_now
        self._refresh(dict(zip(text[4::2], text[5::2], strict=True)), store_now)
        return status, int(turn) if turn and status != "peek" else None, delay, store_now

    def _refresh(self, fields: Mapping[str, str], store_now: float) -> None:
        self.epoch, self.version = fields.get("e", "")[:40], fields.get("v", "")[:20]
        self.learned = learned_from(fields, store_now)
        self.queued = max(0, int(float(fields.get("nt", 0))) - int(float(fields.get("sv", 0))))

    def _update(self, learned: Learned, change: Change) -> Generator[Step, Reply, bool | None]:
        """Write what was learnt if nothing was learnt meanwhile: True, False on a clash, None if the store is away."""
        fields = fields_of(learned, self.learned)
        argv = ["update", self.version, str(len(fields) // 2), *fields]
        for op in change.ops:
            argv += [op[0], *(f"{value:.6f}" for value in op[1:])]
        answer = yield from self._round_trip(argv)
        if answer is None:
            return None
        if answer[0] == "stale":
            return False
        if change.paused is not None:
            observer().paused(self.local.account, change.paused)
        return True

    def _sleep(self, seconds: float) -> Generator[Step, Reply, None]:
        yield Sleep(seconds)

    def _went_away(self, now: float, error: BaseException) -> None:
        self._away_until = now + RETRY_SECONDS
        if self._away_since is None:
            self._away_since = now
            level = logging.WARNING if now - self._warned_at >= WARN_AGAIN_SECONDS else logging.INFO
            if level == logging.WARNING:
                self._warned_at = now
            log.log(
                level,
                "The rate limit store %s did not answer (%s: %s): this process paces its requests on the token at "
                "%s on its own, and asks the store again every %.0f s",
                self._where,
                type(error).__name__,
                str(error)[:200],
                self.local.name,
                RETRY_SECONDS,
            )

    def _announce(self, store_now: float) -> None:
        """One WARNING per process and episode when its requests first wait for the fleet's pace."""
        if self._announced_since == self.learned.since:
            return
        self._announced_since = self.learned.since
        log.warning(
            "Rate limited by the Analytics Platform at %s: every process on this token paces its requests at "
            "%.1f/s in all through the rate limit store %s (%s), %d waiting; single requests log at DEBUG",
            self.local.name,
            self.learned.rate,
            self._where,
            self.learned.source or "learned",
            self.queued,
        )


def _redis_module() -> Any:
    import redis

    return redis


def _redis_error() -> type[BaseException]:
    return _redis_module().RedisError  # type: ignore[no-any-return]
