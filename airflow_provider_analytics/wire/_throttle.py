"""One rate limiter per platform account in a process: what lets a fleet of waits share one token.

The platform limits requests per token, whatever sends them (CONTRACT.md section 3). A triggerer holding a
thousand waits on one connection, each retrying its own 429s, answers every refusal with more requests and
one warning per retry. Here every client of the same account (base URL and token; the limit is per token,
so the workspaces of one token share it) in a process asks one :class:`RateLimiter` for its turn, the way
octokit's throttling plugin queues all requests of a token behind one limiter. Hand-written: Python's limiters
(aiolimiter, pyrate-limiter, limits) pace at a rate given up front, in one event loop or thread; this one learns
it from the answers, holds a token's requests on one ``Retry-After``, and serves threads and event loops alike.

- **Not throttled** (the normal state): nothing is paced; a request costs an attribute read and a count of its send
  (the wall clock and a dict entry of its second: what a first refusal is measured against).
- **A 429** pauses every request of the account in the process until its ``Retry-After`` has passed, then
  lets them go one by one at a learned rate, in the order they asked (each takes a numbered turn), never
  all at once. A request's own 429s no longer use up its retries: it waits its turn instead.
- **The rate** comes from ``X-RateLimit-Limit/Remaining/Reset`` when the platform sends them (the limit per
  window, the window learnt from how ``Reset`` moves): pacing starts when a window is nearly used up, a window
  used up pauses until ``Reset``. Without headers it comes from 429s alone, by a cubic probe under the rate a
  refusal came at (``_pace.py``, with the budget of sends per second). With headers a refusal while pacing
  does the same under their cap: other processes share the token.
- **Recovered** when for :data:`RECOVER_SECONDS` no request had to wait and none was refused.
- **A pause is bounded**, whatever header asked for it (``Retry-After``, or ``X-RateLimit-Reset`` with nothing
  left in the window, on any answer): it holds the account's requests for ``max_pause`` at most (the retry
  policy's ``max_retry_after``, 120 s by default). A request it would hold past its call's deadline or past its
  own client's cap is not held: the retry loop fails it at once with ``RateLimitedError`` naming the header and
  the time it asked for (``_rate_headers.Pause``; docs/api-contract.md, "Decisions").

One WARNING is logged when an account becomes throttled, or instead when a pause over
:data:`WARN_PAUSE_SECONDS` starts (its header, length, the requests waiting; answers that repeat a pause log
nothing), and one INFO line when it recovers; each refused request is logged at DEBUG. The limiter keeps no
memory per request: a turn is a number, the counts are integers, the send times of the last second are at most
``_pace.SENT_LOG_MAX`` floats. ``_accounts.py`` keeps one limiter per account. All methods are cheap and
non-blocking, so the async client calls them on its event loop; a lock makes them safe for the threads of a sync
client. Times are :func:`time.monotonic` seconds, given by the caller (the retry loop in ``_core.py`` passes a
clock that also advances by the sleeps it asked for).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from airflow_provider_analytics.wire._learning import DEFAULT_MAX_PAUSE, Change, Learned
from airflow_provider_analytics.wire._observer import PauseSource, observer
from airflow_provider_analytics.wire._pace import LocalQueue, Turn
from airflow_provider_analytics.wire._rate_headers import Pause, RateHeaders, platform_wall
from airflow_provider_analytics.wire._recent import FULL_SECOND, AcceptedPerSecond, LastSecondCount
from airflow_provider_analytics.wire._share import pressure

log = logging.getLogger("airflow_provider_analytics.wire")

# A pause longer than this logs one WARNING: requests held that long are seen, not a silent hang.
WARN_PAUSE_SECONDS = 5.0

__all__ = ["RateLimiter", "Turn"]


class RateLimiter:
    """The pace of one platform account in this process (see the module's docstring).

    :param name: how log lines name the account (its base URL and the connection that first used it).
    :param account: how metrics name it: that connection's id, never the token (``_observer.py``).
    :param wall_clock: epoch seconds now (what ``X-RateLimit-Reset`` is read against): :func:`time.time`, or a test's.
    """

    def __init__(self, name: str, account: str = "none", wall_clock: Callable[[], float] = time.time) -> None:
        self.name = name
        self.account = account
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self.learned = Learned()
        self.throttled = False  # read without the lock on the fast path: a stale read only costs one turn
        self._queue = LocalQueue()
        self._regrown_at = 0.0  # when the pace last followed the probe curve
        self._successes = LastSecondCount()  # the rate a first refusal came at
        # What the platform accepted of each second's sends: a refusal's ceiling, as the store measures a fleet's; when
        # none of this process's requests was accepted (other processes took the window), the rate they were sent at:
        # a refusal that came at "nothing" would hold the pace at its least for minutes.
        self._accepted = AcceptedPerSecond()
        # Figures for the log lines and for snapshot().
        self.refusals = 0
        self._refused_at_start = 0
        self.waited = 0
        self._longest_wait = 0.0
        self._announce = False

    # Asked by the retry loop --------------------------------------------------------------------------

    def take_turn(self, now: float, kept: Turn | None = None) -> Turn | None:
        """A place in the queue, or ``None`` when the account is not throttled (send at once).

        :param now: monotonic seconds.
        :param kept: the turn of a request that was just refused: it keeps its place instead of going to the end.
        """
        if not self.throttled:
            self._accepted.sent(self._wall_clock())  # sent at once
            return None
        if kept is not None:
            return kept
        with self._lock:
            if self.learned.recovers(now):
                self._recover(now)
            if not self.throttled:
                self._accepted.sent(self._wall_clock())
                return None
            return self._queue.take(now, self.learned.pause_until)

    def delay(self, turn: Turn, now: float) -> float:
        """Seconds to sleep before asking again (0 or less: send now, then call :meth:`sent`).

        :param turn: from :meth:`take_turn`.
        :param now: monotonic seconds.
        """
        with self._lock:
            if not self.throttled:
                return 0.0
            if now - self._regrown_at >= 0.25:  # the pace follows the probe curve; rarely re-anchored
                self._regrown_at = now
                self._apply(self.learned.regrown(now), now)
            return self._queue.delay(turn, now, self.learned.pause_until)

    def sent(self, turn: Turn, now: float) -> None:
        """The turn's request is being sent now.

        :param turn: from :meth:`take_turn`.
        :param now: monotonic seconds.
        """
        with self._lock:
            if not self.throttled:
                return
            self._queue.sent(turn, now)
            self._accepted.sent(self._wall_clock())
            waited = now - turn.asked_at
            if waited > 1.0 / self.learned.rate:
                self.waited += 1
                self.learned.last_delayed = now
                self._longest_wait = max(self._longest_wait, waited)
            announce, self._announce = self._announce, False
            waiting = self._queue.next_turn - turn.number - 1
            rate, queued, share = self.learned.rate, self._queue.waiting, self.learned.share.value
        observer().limiter(self.account, rate, queued, "process", share)  # at each paced send: the gauges follow
        if announce:
            log.warning(
                "Rate limited by the Analytics Platform at %s: this process now paces that token's requests at "
                "%.1f/s (%s), %d waiting; single requests log at DEBUG",
                self.name,
                rate,
                self.learned.source,
                max(0, waiting),
            )

    def forget(self, turn: Turn) -> None:
        """The turn's request gave up waiting (its deadline): the turns after it move up by its place.

        :param turn: from :meth:`take_turn`.
        """
        with self._lock:
            self._queue.forget(turn)

    def answered(
        self, status: int, headers: Mapping[str, str], now: float, max_pause: float = DEFAULT_MAX_PAUSE
    ) -> None:
        """Learn from an answer that was not a 429: count a success, read the ``X-RateLimit-*`` headers.

        :param status: the answer's status.
        :param headers: its headers.
        :param now: monotonic seconds.
        :param max_pause: the longest pause held, as for a 429 (the retry policy's ``max_retry_after``).
        """
        wall = platform_wall(headers, self._wall_clock())
        rate_headers = RateHeaders.parse(headers, wall) if "X-RateLimit-Limit" in headers else None
        if rate_headers is None and not self.throttled:
            if status < 400:
                self._successes.add(now)
            return
        with self._lock:
            if status < 400:
                self._successes.add(now)
            if rate_headers is not None:
                urge = pressure(self._queue.waiting, self.learned.rate) if self.throttled else 1.0
                self._apply(self.learned.headers_seen(rate_headers, status < 400, now, wall, max_pause, urge), now)

    def refused(
        self, pause: float, sent_at: float, now: float, max_pause: float, source: PauseSource = PauseSource.RETRY_AFTER
    ) -> None:
        """A 429: pause every request of the account, and cut the pace unless this refusal is an echo.

        Refusals of requests sent before the current episode began (answers that were on their way) extend
        the pause to their own ``Retry-After`` but cut nothing: one burst of refusals is one episode.

        :param pause: seconds to pause: the answer's ``Retry-After``, or a backoff when it had none.
        :param sent_at: when the refused request was sent (monotonic seconds).
        :param now: monotonic seconds.
        :param max_pause: the longest pause held (the retry policy's ``max_retry_after``).
        :param source: what asked for the pause (for metrics, the log line and errors).
        """
        with self._lock:
            wall = self._wall_clock()
            self._accepted.refused(wall - (now - sent_at), wall)
            # What the platform accepted of this process's busiest second (of those that held nearly the pace's sends,
            # while paced), as the store measures a fleet's; else what succeeded, or the rate its requests were sent at.
            full = FULL_SECOND * self.learned.rate if self.throttled else 0.0
            accepted = self._accepted.busiest(wall, full)
            succeeded = self._successes.busiest(now)
            if not self.throttled:
                # A first refusal, in a burst: a send is counted when its turn is taken, and a burst's requests may
                # wait in the connection pool into the platform's next second; its answers come late instead. Each
                # count is short of what one window took, the more so the bigger the burst (one process alone learnt
                # 74 of 100 from the sends, and paced at 72 for minutes): the larger of the two.
                accepted = max(accepted, int(succeeded))
            came_at = accepted or succeeded or self._accepted.sent_rate(wall)
            change = self.learned.refused(pause, sent_at, now, max_pause, source, came_at, wall, accepted=accepted > 0)
            self._apply(change, now)
            self.refusals += 1

    def pause_in_force(self, now: float) -> Pause | None:
        """The pause holding the account's requests now, with the header that asked for it, or ``None``.

        :param now: monotonic seconds.
        """
        return self.learned.pause_in_force(now)

    def accepted(self, now: float) -> float:
        """The most answers this process had accepted in one second of those it remembers (a fleet accepted no less).

        :param now: monotonic seconds.
        """
        with self._lock:
            return self._successes.busiest(now)

    def expected_wait(self, now: float) -> float:
        """Seconds a request asking now would wait for its turn (0 when not throttled): the queue and any pause.

        :param now: monotonic seconds.
        """
        if not self.throttled:
            return 0.0
        with self._lock:
            return max(0.0, self.learned.pause_until - now) + self._queue.waiting / self.learned.rate

    def snapshot(self) -> dict[str, Any]:
        """The limiter's state and counts, for logs, tests and benchmarks."""
        with self._lock:
            learned = self.learned
            return {
                "throttled": self.throttled,
                "rate": learned.rate if self.throttled else None,
                "ceiling": learned.ceiling or None,
                "header_cap": learned.header_cap,
                "window": learned.window,
                "share": learned.share.value,
                "refused": self.refusals,
                "waited": self.waited,
                "paused_for": max(0.0, learned.pause_until - time.monotonic()),
            }

    # What changed ---------------------------------------------------------------------------------------

    def _apply(self, change: Change, now: float) -> None:
        """Carry out the queue's part of a change and say what it means: a start, a long pause (lock held)."""
        if change.started:
            self.waited = 0
            self._longest_wait = 0.0
            self._refused_at_start = self.refusals
            self._announce = self.learned.pause_until - now <= WARN_PAUSE_SECONDS  # a long pause's own line says it
        for op in change.ops:
            self._queue.apply(op)
        self.throttled = self.learned.throttled
        if change.paused is None:
            return
        observer().paused(self.account, change.paused)
        paused_by = self.learned.paused_by
        if paused_by is not None and paused_by.until - now > WARN_PAUSE_SECONDS and change.longer > WARN_PAUSE_SECONDS:
            # Logged under the lock: once per pause, so the account's other threads rarely wait for it.
            log.warning(*paused_by.warning(self.name, now, self._queue.waiting if self.throttled else 0))
            self._announce = False  # this line says it all: one line, not two

    def _recover(self, now: float) -> None:
        self.learned.recover()
        self.throttled = False
        observer().limiter(self.account, 0.0, 0, "process", self.learned.share.value)  # a gauge keeps its last value
        log.info(
            "No longer rate limited at %s: paced for %.0f s; %d requests refused, %d waited their turn "
            "(longest %.1f s); last pace %.1f/s",
            self.name,
            now - self.learned.since,
            self.refusals - self._refused_at_start,
            self.waited,
            self._longest_wait,
            self.learned.rate,
        )
