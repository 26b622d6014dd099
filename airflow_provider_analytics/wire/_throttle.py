"""One rate limiter per platform account in a process: what lets a fleet of waits share one token.

The platform limits requests per token, whatever sends them (CONTRACT.md section 3). A triggerer holding a
thousand waits on one connection, each retrying its own 429s, answers every refusal with more requests and
one warning per retry. Here every client of the same account (base URL and token; the limit is per token,
so the workspaces of one token share it) in a process asks one :class:`RateLimiter` for its turn, the way
octokit's throttling plugin queues all requests of a token behind one limiter. Hand-written: Python's limiters
(aiolimiter, pyrate-limiter, limits) pace at a rate given up front, in one event loop or thread; this one learns
it from the answers, holds a token's requests on one ``Retry-After``, and serves threads and event loops alike.

- **Not throttled** (the normal state): a request costs one attribute read; nothing is paced or counted.
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
import math
import threading
import time
from collections.abc import Mapping
from typing import Any

from airflow_provider_analytics.wire._observer import PauseSource, observer
from airflow_provider_analytics.wire._pace import MIN_RATE, SendSpan, Turn, probe_rate
from airflow_provider_analytics.wire._rate_headers import Pause, RateHeaders
from airflow_provider_analytics.wire._recent import LastSecondCount

log = logging.getLogger("airflow_provider_analytics.wire")

# A refusal this soon after the last pause ended means the ceiling was far too high: cut it harder.
QUICK_REFUSAL_SECONDS = 5.0
QUICK_REFUSAL_CUT = 0.85
# Share of a window's limit paced when the X-RateLimit headers give it: room for the clock's rounding.
HEADER_SHARE = 0.95
# Pacing starts when a window has this share of its limit left (or less).
HEADER_LOW_SHARE = 0.1
# Even Retry-After: 0 pauses this long: a platform that says "now" to every refusal cannot make it spin.
MIN_PAUSE = 0.05
# A pause longer than this logs one WARNING: requests held that long are seen, not a silent hang.
WARN_PAUSE_SECONDS = 5.0
# The longest pause held when the caller does not say (the retry policy's default ``max_retry_after``).
DEFAULT_MAX_PAUSE = 120.0
# Throttling ends after this long without a refusal and without a request that had to wait.
RECOVER_SECONDS = 30.0
# The pace binds while a request had to wait for its turn within this many seconds: only then does a refusal
# say that the pace is too fast.
BINDING_SECONDS = 5.0
# A request waiting for its turn asks again at least this often (a pace learnt meanwhile may bring it forward).
RECHECK_SECONDS = 1.0

__all__ = ["RateLimiter", "Turn"]


class RateLimiter:
    """The pace of one platform account in this process (see the module's docstring).

    :param name: how log lines name the account (its base URL and the connection that first used it).
    :param account: how metrics name it: that connection's id, never the token (``_observer.py``).
    """

    def __init__(self, name: str, account: str = "none") -> None:
        self.name = name
        self.account = account
        self._lock = threading.Lock()
        self.throttled = False  # read without the lock on the fast path: a stale read only costs one turn
        self._rate = 0.0  # requests per second while throttled
        self._ceiling = 0.0  # the rate the last refusal came at
        self._probe_from = 0.0  # when pacing (re)started from just under the ceiling
        self._regrown_at = 0.0  # when the pace last followed the probe curve
        self._header_cap: float | None = None  # the fastest pace the X-RateLimit headers allow
        self._window: float | None = None  # the platform's window, learnt from how Reset moves
        self._last_reset: float | None = None
        self._pause_until = 0.0
        self._paused_by: Pause | None = None  # the header behind the current pause, for errors and the warning
        self._episode_at = -math.inf  # when the last refusal that cut the pace came
        # The schedule of turns: turn k may go at anchor_time + (k - anchor_turn) / rate, and no span of
        # _pace.SPAN_SECONDS holds more sends than the pace allows (``_sent``: the latest send times, bounded).
        self._next_turn = 0
        self._served = 0  # one past the highest turn sent
        self._anchor_turn = 0
        self._anchor_time = 0.0
        self._sent = SendSpan()
        self._last_delayed = -math.inf
        self._successes = LastSecondCount()  # the rate a first refusal came at
        # Figures for the log lines and for snapshot().
        self._since = 0.0
        self.refusals = 0
        self._refused_at_start = 0
        self.waited = 0
        self._longest_wait = 0.0
        self._source = ""
        self._announce = False

    # Asked by the retry loop --------------------------------------------------------------------------

    def take_turn(self, now: float, kept: Turn | None = None) -> Turn | None:
        """A place in the queue, or ``None`` when the account is not throttled (send at once).

        :param now: monotonic seconds.
        :param kept: the turn of a request that was just refused: it keeps its place instead of going to the end.
        """
        if not self.throttled:
            return None
        if kept is not None:
            return kept
        with self._lock:
            if not self.throttled:
                return None
            self._maybe_recover(now)
            if not self.throttled:
                return None
            start = max(now, self._pause_until)
            if self._due(self._next_turn) < start:  # idle time earns no burst of turns
                self._anchor_turn, self._anchor_time = self._next_turn, start
            turn = Turn(self._next_turn, now)
            self._next_turn += 1
            return turn

    def delay(self, turn: Turn, now: float) -> float:
        """Seconds to sleep before asking again (0 or less: send now, then call :meth:`sent`).

        :param turn: from :meth:`take_turn`.
        :param now: monotonic seconds.
        """
        with self._lock:
            if not self.throttled:
                return 0.0
            self._regrow(now)
            gate = max(self._pause_until, self._sent.gate(now, self._rate))
            due = self._due(turn.number)
            if due < gate and gate > now and turn.number >= self._served:
                # The schedule fell behind what may be sent (the second's budget is spent, or a pause): this turn
                # goes at the gate and the later ones after it, so turns keep their order instead of racing for
                # the gate. A turn that is merely late (a busy loop) moves nothing: late sends catch up.
                self._anchor_turn, self._anchor_time = turn.number, gate
                due = gate
            if self._pause_until >= due:
                return self._pause_until - now  # nothing changes a pause but a longer one: sleep it whole
            # A faster pace (learnt meanwhile) brings turns forward: ask again at least this often.
            return min(max(gate, due) - now, RECHECK_SECONDS)

    def sent(self, turn: Turn, now: float) -> None:
        """The turn's request is being sent now.

        :param turn: from :meth:`take_turn`.
        :param now: monotonic seconds.
        """
        with self._lock:
            if not self.throttled:
                return
            self._sent.add(now)
            self._served = max(self._served, turn.number + 1)
            waited = now - turn.asked_at
            if waited > 1.0 / self._rate:
                self.waited += 1
                self._last_delayed = now
                self._longest_wait = max(self._longest_wait, waited)
            announce, self._announce = self._announce, False
            waiting = self._next_turn - turn.number - 1
            rate, queued = self._rate, self._next_turn - self._served
        observer().limiter(self.account, rate, max(0, queued))  # at each paced send: the gauges follow the pace
        if announce:
            log.warning(
                "Rate limited by the Analytics Platform at %s: this process now paces that token's requests at "
                "%.1f/s (%s), %d waiting; single requests log at DEBUG",
                self.name,
                self._rate,
                self._source,
                max(0, waiting),
            )

    def answered(
        self, status: int, headers: Mapping[str, str], now: float, max_pause: float = DEFAULT_MAX_PAUSE
    ) -> None:
        """Learn from an answer that was not a 429: count a success, read the ``X-RateLimit-*`` headers.

        :param status: the answer's status.
        :param headers: its headers.
        :param now: monotonic seconds.
        :param max_pause: the longest pause held, as for a 429 (the retry policy's ``max_retry_after``).
        """
        rate_headers = RateHeaders.parse(headers, time.time()) if "X-RateLimit-Limit" in headers else None
        if rate_headers is None and not self.throttled:
            if status < 400:
                self._successes.add(now)
            return
        with self._lock:
            if status < 400:
                self._successes.add(now)
            if rate_headers is not None:
                self._learn(rate_headers, now, max_pause)

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
            self._pause(now, max(pause, MIN_PAUSE), source, max_pause)
            # A refusal while nobody waits for a turn is not about this process's pace (another process on the
            # token, a proxy): it pauses, and cuts nothing; else random refusals would ratchet the pace down.
            # With the X-RateLimit headers too: a refusal while pacing under their cap means other processes share
            # the token, so this one's share of the limit is smaller than the headers say. Each process cuts its own
            # pace and probes back (as TCP flows share a path), instead of every process keeping 95 % of the limit
            # and all of them meeting refusals at each window's start.
            binding = now - self._last_delayed < BINDING_SECONDS
            if sent_at >= self._episode_at and not (self.throttled and not binding):
                if self.throttled:
                    self._regrow(now)
                    quick = now - self._probe_from < QUICK_REFUSAL_SECONDS
                    # The pace it came at; but a pace far below what the platform just accepted was still being
                    # learnt (from a window's last requests) and says nothing about the limit.
                    accepted = self._successes.total(now)
                    came_at = accepted if self._rate < accepted / 2 else self._rate
                    self._ceiling = came_at * (QUICK_REFUSAL_CUT if quick else 1.0)
                else:
                    self._ceiling = self._successes.total(now)
                    # With no success counted, the headers alone give the pace (_paced): say so in the log line.
                    by_headers = self._header_cap is not None and not self._ceiling
                    self._start(
                        now, "from a 429 and the X-RateLimit headers" if by_headers else "learned from 429 answers"
                    )
                self._episode_at = now
                self._restart_pace(self._pause_until)
            self.refusals += 1

    def pause_in_force(self, now: float) -> Pause | None:
        """The pause holding the account's requests now, with the header that asked for it, or ``None``.

        :param now: monotonic seconds.
        """
        paused_by = self._paused_by
        return paused_by if paused_by is not None and paused_by.until > now else None

    def expected_wait(self, now: float) -> float:
        """Seconds a request asking now would wait for its turn (0 when not throttled): the queue and any pause.

        :param now: monotonic seconds.
        """
        if not self.throttled:
            return 0.0
        with self._lock:
            queued = max(0, self._next_turn - self._served) / self._rate
            return max(0.0, self._pause_until - now) + queued

    def snapshot(self) -> dict[str, Any]:
        """The limiter's state and counts, for logs, tests and benchmarks."""
        with self._lock:
            return {
                "throttled": self.throttled,
                "rate": self._rate if self.throttled else None,
                "ceiling": self._ceiling or None,
                "header_cap": self._header_cap,
                "window": self._window,
                "refused": self.refusals,
                "waited": self.waited,
                "paused_for": max(0.0, self._pause_until - time.monotonic()),
            }

    # The pace -----------------------------------------------------------------------------------------

    def _pause(self, now: float, asked: float, source: PauseSource, max_pause: float) -> None:
        """No request for ``asked`` seconds, ``max_pause`` at most; then the turns go in order, one turn apart.

        A pause that starts, or that lengthens the one in force by more than WARN_PAUSE_SECONDS, and lasts longer
        than that, makes one WARNING: the answers that merely repeat a pause (a fleet's refusals) make none.
        """
        until = now + min(asked, max_pause)
        if until <= self._pause_until:
            return
        longer = until - max(now, self._pause_until)
        self._pause_until = until
        self._paused_by = Pause(source.header, asked, time.time() + asked, until, max_pause)
        observer().paused(self.account, source)
        if self.throttled:
            self._anchor_turn, self._anchor_time = self._served, until
        if until - now > WARN_PAUSE_SECONDS and longer > WARN_PAUSE_SECONDS:
            # Logged under the lock: once per pause, so the account's other threads rarely wait for it.
            waiting = self._next_turn - self._served if self.throttled else 0
            log.warning(*self._paused_by.warning(self.name, now, waiting))
            self._announce = False  # this line says it all: one line, not two

    def _due(self, number: int) -> float:
        return self._anchor_time + (number - self._anchor_turn) / self._rate

    def _set_rate(self, rate: float, now: float) -> None:
        """Change the pace from ``now`` on, keeping every waiting turn's order (turns due by now stay due)."""
        if self._rate > 0:
            due_now = self._anchor_turn + max(0.0, now - self._anchor_time) * self._rate
            self._anchor_turn, self._anchor_time = math.ceil(due_now), max(now, self._anchor_time)
        self._rate = max(MIN_RATE, rate)

    def _restart_pace(self, at: float) -> None:
        """After a refusal: the first turn not yet sent goes at ``at``, the others after it at the new pace."""
        self._probe_from = at
        self._rate = max(MIN_RATE, self._paced(at))
        self._anchor_turn, self._anchor_time = self._served, at

    def _paced(self, now: float) -> float:
        """The pace at ``now`` on the cubic probe from the last restart (``_pace.py``)."""
        return probe_rate(self._ceiling, self._header_cap, now - self._probe_from)

    def _regrow(self, now: float) -> None:
        # The pace follows the probe curve; recomputed at most every 0.25 s so turns are rarely re-anchored.
        if now >= self._probe_from and now - self._regrown_at >= 0.25:
            self._regrown_at = now
            rate = self._paced(now)
            if abs(rate - self._rate) > 0.001 * self._rate:
                self._set_rate(rate, now)

    def _learn(self, headers: RateHeaders, now: float, max_pause: float) -> None:
        if headers.reset_epoch is None:
            return
        if self._last_reset is not None and headers.reset_epoch > self._last_reset:
            moved = headers.reset_epoch - self._last_reset
            self._window = moved if self._window is None else min(self._window, moved)
        if self._last_reset is None or headers.reset_epoch > self._last_reset:
            self._last_reset = headers.reset_epoch
        left = headers.reset_epoch - time.time()
        if self._window is not None:
            cap = HEADER_SHARE * headers.limit / self._window
        else:  # until the window is known: what is left of this one, over the time left (a second at least)
            cap = HEADER_SHARE * max(1, headers.remaining) / max(1.0, left)
        self._header_cap = max(MIN_RATE, cap)
        low = headers.remaining <= max(1, HEADER_LOW_SHARE * headers.limit)
        if headers.remaining == 0 and left > 0:  # the window is used up: nobody goes before it resets
            self._pause(now, min(left, self._window or left), PauseSource.RATE_LIMIT_RESET, max_pause)
        if self.throttled:
            if low:
                self._last_delayed = now  # a nearly spent window is no time to stop pacing
            return
        if low:
            self._start(now, "from the platform's X-RateLimit headers")
            self._ceiling = 0.0  # no refusal yet: the headers' pace holds
            self._restart_pace(max(now, self._pause_until))

    def _start(self, now: float, source: str) -> None:
        self.throttled = True
        self._since = now
        self._episode_at = now  # refusals of requests sent before pacing began are its echoes
        self._source = source
        self._announce = self._pause_until - now <= WARN_PAUSE_SECONDS  # a long pause's own line said it (_pause)
        self._rate = MIN_RATE
        self._anchor_turn, self._anchor_time = self._next_turn, now
        self._served = self._next_turn
        self._sent.clear()
        self._last_delayed = now
        self.waited = 0
        self._longest_wait = 0.0
        self._refused_at_start = self.refusals

    def _maybe_recover(self, now: float) -> None:
        quiet_since = max(self._last_delayed, self._episode_at, self._pause_until)
        if now - quiet_since < RECOVER_SECONDS:
            return
        self.throttled = False
        observer().limiter(self.account, 0.0, 0)  # a gauge keeps its last value: say that nothing is paced now
        log.info(
            "No longer rate limited at %s: paced for %.0f s; %d requests refused, %d waited their turn "
            "(longest %.1f s); last pace %.1f/s",
            self.name,
            now - self._since,
            self.refusals - self._refused_at_start,
            self.waited,
            self._longest_wait,
            self._rate,
        )
