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

import logging
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, replace

from airflow_provider_analytics.wire._learning import Change, Learned
from airflow_provider_analytics.wire._observer import PauseSource, observer
from airflow_provider_analytics.wire._pace import MIN_RATE
from airflow_provider_analytics.wire._rate_headers import Pause, RateHeaders, platform_wall
from airflow_provider_analytics.wire._recent import LastSecondCount
from airflow_provider_analytics.wire._steps import Reply, Sleep, Step
from airflow_provider_analytics.wire._store_link import LEAST_WAIT_SECONDS, STORE_RECHECK_SECONDS, StoreLink
from airflow_provider_analytics.wire._store_script import (
    differs,
    fields_of,
    learned_from,
    whole,
)
from airflow_provider_analytics.wire._throttle import RateLimiter
from airflow_provider_analytics.wire.config import RateLimitStore

log = logging.getLogger("airflow_provider_analytics.wire")

__all__ = ["SharedLimiter", "SharedTurn"]


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


class SharedLimiter:
    """The limiter every process on one account shares through ``store`` (see the module's docstring).

    :param store: where the shared state lives.
    :param key: the account's name in the store (:func:`store_key`).
    :param local: this process's own limiter of the account: it learns from every answer too, and paces alone
        while the store is away.
    """

    def __init__(self, store: RateLimitStore, key: str, local: RateLimiter) -> None:
        self.store = store
        self.local = local
        self.link = StoreLink(store, key, local.name)
        self.learned = Learned()  # the state as the last round trip found it
        self.version = ""
        self.epoch = ""
        self.queued = 0
        self._sent = LastSecondCount()  # this process's sends, for its share of the fleet's pace
        self._announced_since: float | None = None
        self._delayed_field = ""  # when a turn last waited, as the store wrote it (recovery asks it did not move)

    # What the retry loop asks ---------------------------------------------------------------------------

    def usable(self, now: float) -> bool:
        """Whether requests go through the store now (``_store_link.StoreLink.usable``).

        :param now: monotonic seconds.
        """
        return self.link.usable(now)

    @property
    def keys(self) -> tuple[str, ...]:
        """The account's keys in the store (none holds the token)."""
        return self.link.keys

    def _round_trip(self, argv: list[str]) -> Generator[Step, Reply, tuple[str, int | None, float, float] | None]:
        """One operation of the store's script; the state refreshed from its answer; ``None``: the store is away."""
        answered = yield from self.link.round_trip(argv)
        if answered is None:
            return None
        answer, fields, store_now = answered
        self._refresh(fields, store_now)
        return answer

    def wait_for_turn(
        self, kept: SharedTurn | None, checks: Callable[[float, float, Pause | None], float]
    ) -> Generator[Step, Reply, SharedTurn | None]:
        """Take a turn in the fleet's queue (or keep ``kept``) and wait until it comes; ``None``: the store is away, or
        too slow for what the call has left (that call alone paces on this process's own limiter).

        :param kept: the turn of a request that was just refused: it keeps its place.
        :param checks: called before each wait with (now, the wait, the pause holding it): answers how long to
            sleep before asking again, or raises when the turn must be given up (the call's deadline is near, or a
            pause is longer than the client allows).
        """
        if kept is None and self.learned.recovers(time.monotonic() + self.link.offset):
            yield from self._recover()
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
            # or a few seconds, after which the turn asks again; and never nothing, so that it cannot spin.
            delay = min(delay, max(STORE_RECHECK_SECONDS, paused_by.until - now if paused_by else 0.0))
            delay = max(LEAST_WAIT_SECONDS, delay)
            asked_at = kept.asked_at if kept else store_now
            kept = SharedTurn(turn if turn is not None else -1, self.epoch, asked_at)
            try:
                delay = checks(now, delay, paused_by)
            except Exception:  # the call gives up its turn (the error goes on): the fleet's schedule skips it
                yield from self._round_trip(["forget", str(kept.number), kept.epoch])
                raise
            yield from self._sleep(delay)
            hint = (
                max(MIN_RATE, self.learned.paced(time.monotonic() + self.link.offset)) if self.learned.throttled else 0
            )
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
        wall = platform_wall(headers, time.time())
        rate_headers = RateHeaders.parse(headers, wall)
        if rate_headers is None:
            return
        for _ in range(3):  # a clash: another process learnt meanwhile; learn again from what it wrote
            learned = replace(self.learned)
            change = learned.headers_seen(rate_headers, status < 400, now + self.link.offset, wall, max_pause)
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
        self.local.refused(pause, turn.sent_at - self.link.offset, now, max_pause, source)
        if not self.usable(now):
            return
        peek = yield from self._round_trip(["peek", f"{turn.sent_at:.6f}"])
        if peek is None:
            return
        # The fleet accepted no less than this process saw accepted: the store misses the sends of calls that paced
        # on their own while it was too slow for them (a loop that lags in a start-up burst), and all of them when
        # it lost its list (flushed): a ceiling of 0 would hold the fleet at the least pace for minutes.
        came_at, accepted = max(peek[2], self.local.accepted(now)), peek[1] == 1
        for _ in range(3):
            learned = replace(self.learned)
            store_now = time.monotonic() + self.link.offset
            change = learned.refused(
                pause, turn.sent_at, store_now, max_pause, source, came_at, time.time(), accepted=accepted
            )
            if (yield from self._update(learned, change)) is not False:
                return

    def pause_in_force(self, now: float) -> Pause | None:
        """The pause holding the fleet's requests now (by this process's clock), or ``None``.

        :param now: monotonic seconds.
        """
        paused_by = self.learned.pause_in_force(now + self.link.offset)
        return None if paused_by is None else replace(paused_by, until=paused_by.until - self.link.offset)

    def expected_wait(self, now: float) -> float:
        """Seconds a request asking now would wait for its turn, as the last round trip saw the queue.

        :param now: monotonic seconds.
        """
        if not self.usable(now):
            return self.local.expected_wait(now)
        if not self.learned.throttled:
            return 0.0
        return max(0.0, self.learned.pause_until - now - self.link.offset) + self.queued / max(
            MIN_RATE, self.learned.rate
        )

    def share(self, now: float) -> float:
        """This process's part of the fleet's pace: its sends in the last second over that pace.

        :param now: monotonic seconds.
        """
        return min(1.0, self._sent.total(now) / max(MIN_RATE, self.learned.rate)) if self.learned.throttled else 1.0

    # Round trips ----------------------------------------------------------------------------------------

    def _refresh(self, fields: Mapping[str, str], store_now: float) -> None:
        self.epoch, self.version = fields.get("e", "")[:40], fields.get("v", "")[:20]
        self._delayed_field = fields.get("ld", "")[:40]
        self.learned = learned_from(fields, store_now)
        counts = [whole(fields, name) for name in ("nt", "sv", "gone")]
        self.queued = max(0, counts[0] - counts[1] - counts[2])

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
        if change.started:  # the fleet's episode: said once, by the process that began it
            self._announced_since = self.learned.since
            log.warning(
                "Rate limited by the Analytics Platform at %s (%s): every process on this token now paces its "
                "requests through the rate limit store %s; each process says so at INFO, single requests at DEBUG",
                self.local.name,
                self.learned.source or "learned",
                self.link.where,
            )
        return True

    def _recover(self) -> Generator[Step, Reply, None]:
        """Pacing ends for the fleet (``Learned.recovers`` said so), unless a turn waited or something was learnt
        since this process read the state; said once, by the process that ended it."""
        since = self.learned.since
        answer = yield from self._round_trip(["recover", self.version, self._delayed_field])
        if answer is not None and answer[0] == "ok":
            log.info(
                "No longer rate limited at %s: every process on this token sends at once again, after %.0f s paced "
                "through the rate limit store %s",
                self.local.name,
                time.monotonic() + self.link.offset - since,
                self.link.where,
            )

    def _sleep(self, seconds: float) -> Generator[Step, Reply, None]:
        yield Sleep(seconds)

    def _announce(self, store_now: float) -> None:
        """One INFO line per process and episode when its requests first wait for the fleet's pace (the WARNING is
        the fleet's, :meth:`_update`: a thousand task processes in one episode log one, not a thousand)."""
        if self._announced_since == self.learned.since:
            return
        self._announced_since = self.learned.since
        log.info(
            "Rate limited by the Analytics Platform at %s: every process on this token paces its requests at "
            "%.1f/s in all through the rate limit store %s (%s), %d waiting; single requests log at DEBUG",
            self.local.name,
            self.learned.rate,
            self.link.where,
            self.learned.source or "learned",
            self.queued,
        )
