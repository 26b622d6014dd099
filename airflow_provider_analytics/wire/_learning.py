"""What a rate limiter has learnt about its token's limit, and the rules it learns by: written once for both limiters.

A process's own limiter (``_throttle.py``) and the limiter a fleet of processes shares through a store
(``_shared_limiter.py``) learn the same way; they differ only in where what they learnt lives (this process's
memory, or the store) and in whose requests they queue. :class:`Learned` is that state, and its methods are the
rules:

- **From 429s** (no ``X-RateLimit-*`` headers): the rate a refusal came at is a ceiling: what the platform accepted of
  the sends of one second (``_recent.AcceptedPerSecond``; the store counts a fleet's the same way), the pace when
  it accepted more; the pace restarts just under it and creeps back over it slowly (``_pace.probe_rate``). Refusals
  of requests sent before the episode began are echoes: they pause, and cut nothing. A refusal while no request
  had to wait for its turn is not about this limiter's pace (another process, a proxy): it pauses, and cuts nothing
  either.
- **From the headers**: the limit per window (the window learnt from how ``Reset`` moves) caps the pace; pacing
  starts when a window is nearly used up; a used-up window pauses until ``Reset``. What share of that limit this
  limiter may use is learnt too (:class:`~._share.ShareOfLimit`): the requests of other processes on the token show
  in ``Remaining``.
- **A pause** holds every request of the limiter for a ``Retry-After`` (or until a used-up window resets), for at
  most the retry policy's ``max_retry_after``.
- **Recovered** when for :data:`RECOVER_SECONDS` no request had to wait and none was refused.

The methods change the state and return what the queue of turns must do about it (:data:`QueueOp`): the local
limiter applies those to its own queue under its lock, the shared one sends them to the store with what changed.
Nothing here does I/O, logs or keeps time itself: times are given by the caller, in the limiter's clock
(:func:`time.monotonic` for the local one, the store's clock for the shared one), and ``wall`` is epoch seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TypeAlias

from airflow_provider_analytics.wire._observer import PauseSource
from airflow_provider_analytics.wire._pace import HEADER_SHARE, MIN_RATE, probe_rate
from airflow_provider_analytics.wire._rate_headers import Pause, RateHeaders
from airflow_provider_analytics.wire._share import ShareOfLimit

__all__ = ["DEFAULT_MAX_PAUSE", "MIN_PAUSE", "RECOVER_SECONDS", "Change", "Learned", "QueueOp"]

# A refusal this soon after the last pause ended means the ceiling was far too high: cut it harder.
QUICK_REFUSAL_SECONDS = 5.0
QUICK_REFUSAL_CUT = 0.85
# Pacing starts when a window has this share of its limit left (or less).
HEADER_LOW_SHARE = 0.1
# Even Retry-After: 0 pauses this long: a platform that says "now" to every refusal cannot make it spin.
MIN_PAUSE = 0.05
# The longest pause held when the caller does not say (the retry policy's default ``max_retry_after``).
DEFAULT_MAX_PAUSE = 120.0
# Throttling ends after this long without a refusal and without a request that had to wait.
RECOVER_SECONDS = 30.0
# The pace binds while a request had to wait for its turn within this many seconds: only then does a refusal
# say that the pace is too fast.
BINDING_SECONDS = 5.0

# What the queue of turns does about a change (``_throttle.LocalQueue`` and the store's script alike):
# ("start", t): pacing starts at t, turns taken from now on are paced, from t;
# ("restart", t, rate): the first turn not yet sent goes at t, the others after it at rate;
# ("rate", rate, t): from t on, turns go at rate, in the order they were taken;
# ("pause", until): no turn goes before until; then in order, from the first not yet sent.
QueueOp: TypeAlias = tuple[str, float] | tuple[str, float, float]


@dataclass
class Change:
    """What one event changed: the queue's part, whether pacing started, whether a pause started or grew.

    :param ops: what the queue of turns must do, in order.
    :param started: pacing started with this event.
    :param paused: what asked for a pause that started or grew longer with this event, if one did.
    :param longer: by how many seconds it grew (its whole length when it started).
    """

    ops: list[QueueOp] = field(default_factory=list)
    started: bool = False
    paused: PauseSource | None = None
    longer: float = 0.0


@dataclass
class Learned:
    """What one limiter has learnt about its account's limit (see the module's docstring).

    :param throttled: whether requests are paced (else they go at once).
    :param rate: the pace while throttled, requests per second.
    :param ceiling: the rate the last refusal that cut the pace came at (0: none).
    :param probe_from: when the pace last restarted from just under the ceiling.
    :param header_cap: the fastest pace the ``X-RateLimit-*`` headers allow this limiter (its share included).
    :param window: the platform's window in seconds, learnt from how ``Reset`` moves.
    :param limit: the limit per window the headers last announced (a new one is a new window to learn).
    :param last_reset: the latest ``Reset`` seen (epoch seconds).
    :param pause_until: no request goes before this time.
    :param paused_by: the header behind the pause, for errors and log lines.
    :param episode_at: when the last refusal that cut the pace came (refusals of requests sent before are echoes).
    :param last_delayed: when a request last had to wait for its turn.
    :param since: when pacing started.
    :param source: what pacing was learnt from, in words (for log lines).
    :param share: this limiter's share of the limit, learnt from ``Remaining`` (1 when it is alone on the token).
    """

    throttled: bool = False
    rate: float = 0.0
    ceiling: float = 0.0
    probe_from: float = 0.0
    header_cap: float | None = None
    window: float | None = None
    limit: int | None = None
    last_reset: float | None = None
    pause_until: float = 0.0
    paused_by: Pause | None = None
    episode_at: float = -math.inf
    last_delayed: float = -math.inf
    since: float = 0.0
    source: str = ""
    share: ShareOfLimit = field(default_factory=ShareOfLimit)

    def paced(self, now: float) -> float:
        """The pace at ``now`` on the probe curve from the last restart, under the headers' cap (``_pace.py``).

        :param now: the limiter's clock.
        """
        return probe_rate(self.ceiling, self.header_cap, now - self.probe_from)

    def regrown(self, now: float, change: Change | None = None) -> Change:
        """Follow the probe curve: the pace at ``now``, when it moved by more than 0.1 %.

        :param now: the limiter's clock.
        :param change: the change this is part of (a new one when ``None``).
        """
        change = Change() if change is None else change
        if not self.throttled or now < self.probe_from:
            return change
        rate = max(MIN_RATE, self.paced(now))
        if abs(rate - self.rate) > 0.001 * self.rate:
            self.rate = rate
            change.ops.append(("rate", rate, now))
        return change

    def pause(
        self, now: float, asked: float, source: PauseSource, max_pause: float, wall: float, change: Change
    ) -> None:
        """Hold every request for ``asked`` seconds (``max_pause`` at most); nothing when a longer pause holds them.

        :param now: the limiter's clock.
        :param asked: the seconds the header asked for.
        :param source: what asked for it.
        :param max_pause: the longest pause held (the retry policy's ``max_retry_after``).
        :param wall: epoch seconds now (the pause's end as the header meant it, for messages).
        :param change: the change this is part of.
        """
        until = now + min(asked, max_pause)
        if until <= self.pause_until:
            return
        change.paused, change.longer = source, until - max(now, self.pause_until)
        self.pause_until = until
        self.paused_by = Pause(source.header, asked, wall + asked, until, max_pause)
        if self.throttled:
            change.ops.append(("pause", until))

    def start(self, now: float, source: str, change: Change) -> None:
        """Pacing starts: turns taken from now on wait for the pace.

        :param now: the limiter's clock.
        :param source: what the pace is learnt from, for log lines.
        :param change: the change this is part of.
        """
        self.throttled = True
        self.since = now
        self.episode_at = now  # refusals of requests sent before pacing began are its echoes
        self.source = source
        self.rate = MIN_RATE
        self.last_delayed = now
        change.started = True
        change.ops.append(("start", now))

    def restart_pace(self, at: float, change: Change) -> None:
        """After a refusal (or when the headers start pacing): the pace restarts from just under the ceiling at ``at``.

        :param at: the limiter's clock: when the first turn not yet sent goes.
        :param change: the change this is part of.
        """
        self.probe_from = at
        self.rate = max(MIN_RATE, self.paced(at))
        change.ops.append(("restart", at, self.rate))

    def refused(
        self,
        pause: float,
        sent_at: float,
        now: float,
        max_pause: float,
        source: PauseSource,
        came_at: float,
        wall: float,
        *,
        accepted: bool = False,
    ) -> Change:
        """A 429: pause every request, and cut the pace unless this refusal is an echo or not about this pace.

        :param pause: seconds to pause: the answer's ``Retry-After``, or a backoff when it had none.
        :param sent_at: when the refused request was sent (the limiter's clock).
        :param now: the limiter's clock.
        :param max_pause: the longest pause held (the retry policy's ``max_retry_after``).
        :param source: what asked for the pause.
        :param came_at: the requests per second that succeeded just before (the rate the refusal came at).
        :param wall: epoch seconds now.
        :param accepted: ``came_at`` counts what the platform accepted of the sends of one second, the busiest of those
            that held nearly the pace's sends (the fleet's through the store; else this limiter's own), not answers
            as they arrived or the rate requests were sent at.
        """
        change = Change()
        self.pause(now, max(pause, MIN_PAUSE), source, max_pause, wall, change)
        binding = now - self.last_delayed < BINDING_SECONDS
        if sent_at < self.episode_at or (self.throttled and not binding):
            return change
        if self.header_cap is not None:
            # The headers pace it: the share learns from this window's refusals (_share.py); what the rate of
            # successes was says less than the limit the platform announced.
            if not self.throttled:
                self.start(now, "from a 429 and the X-RateLimit headers", change)
                self.ceiling = 0.0
                self.episode_at = now
                self.restart_pace(self.pause_until, change)
            return change
        if self.throttled:
            self.regrown(now, change)
            quick = now - self.probe_from < QUICK_REFUSAL_SECONDS
            # A pace far below what the platform just accepted was still being learnt (from a window's last
            # requests) and says nothing about the limit: then the rate accepted is the one it came at.
            rate = came_at if self.rate < came_at / 2 else self.rate
            if accepted and came_at > 0:
                # What the platform accepted of a second's sends is measured, not guessed: the ceiling is the smaller
                # of that and the pace (a refusal of sends that bunched up, when it accepted more than the pace). Cuts
                # by a guess overshoot: after a burst's refusals a fleet's 97 % of 100 became 82 %; one process alone
                # paced at 88 % of the limit, and sixteen without a store froze at shares of 1 to 13 requests a second
                # (the slowest waits 5.9x their floor).
                self.ceiling = min(rate, came_at)
            else:
                self.ceiling = rate * (QUICK_REFUSAL_CUT if quick else 1.0)
        else:
            self.ceiling = came_at
            self.start(now, "learned from 429 answers", change)
        self.episode_at = now
        self.restart_pace(self.pause_until, change)
        return change

    def headers_seen(
        self, headers: RateHeaders, ok: bool, now: float, wall: float, max_pause: float, urge: float = 1.0
    ) -> Change:
        """Learn from an answer's ``X-RateLimit-*`` headers: the window, the cap, this limiter's share, a pause.

        :param headers: the answer's headers, checked.
        :param ok: whether the answer succeeded (a refusal says the window is used up).
        :param now: the limiter's clock.
        :param wall: epoch seconds now.
        :param max_pause: the longest pause held.
        :param urge: how long this limiter's requests wait for their turn, as ``_share.pressure`` says it: the share
            grows faster the longer they wait.
        """
        change = Change()
        if headers.reset_epoch is None:
            return change
        if self.limit is not None and headers.limit != self.limit:
            # A new limit is a new policy, with a window of its own: a 60 s window kept when 6,000 a minute became
            # 3 a second would pace at 3 a minute (a nearer Reset teaches nothing: late answers of an old window)
            self.window, self.last_reset = None, None
        self.limit = headers.limit
        if self.last_reset is not None and headers.reset_epoch > self.last_reset:
            moved = headers.reset_epoch - self.last_reset
            # Only once the window it replaces has ended: a Reset that moves well before is the same window as
            # another node of the platform, its clock a second off, tells it (learnt, a 60 s window of 600 became 1 s,
            # a pace of 582 requests a second).
            if wall >= self.last_reset - moved / 2:
                self.window = moved if self.window is None else min(self.window, moved)
        if self.last_reset is None or headers.reset_epoch > self.last_reset:
            self.last_reset = headers.reset_epoch
        left = headers.reset_epoch - wall
        self.share.observe(headers.reset_epoch, headers.remaining, headers.limit, ok, self.window, left, urge)
        if self.window is not None:
            cap = HEADER_SHARE * headers.limit / self.window
        else:  # until the window is known: what is left of this one, over the time left (a second at least)
            cap = HEADER_SHARE * max(1, headers.remaining) / max(1.0, left)
        self.header_cap = max(MIN_RATE, cap * self.share.value)  # the pace follows at its next turn (regrown)
        if self.ceiling and self.window is not None:
            self.ceiling = 0.0  # the platform announces its limit now: what 429s alone taught gives way to it
        low = headers.remaining <= max(1, HEADER_LOW_SHARE * headers.limit)
        if headers.remaining == 0 and left > 0:  # the window is used up: nobody goes before it resets
            self.pause(now, min(left, self.window or left), PauseSource.RATE_LIMIT_RESET, max_pause, wall, change)
        if self.throttled:
            if low:
                self.last_delayed = now  # a nearly spent window is no time to stop pacing
            return change
        if low:
            self.start(now, "from the platform's X-RateLimit headers", change)
            self.share.started(headers.remaining)
            self.header_cap = max(MIN_RATE, cap * self.share.value)
            self.ceiling = 0.0  # no refusal yet: the headers' pace holds
            self.restart_pace(max(now, self.pause_until), change)
        return change

    def recover(self) -> None:
        """Pacing ends (:meth:`recovers` said so)."""
        self.throttled = False
        self.share.stopped()

    def recovers(self, now: float) -> bool:
        """Whether pacing ends now: no request had to wait, none was refused, no pause held, for a while.

        :param now: the limiter's clock.
        """
        return self.throttled and now - max(self.last_delayed, self.episode_at, self.pause_until) >= RECOVER_SECONDS

    def pause_in_force(self, now: float) -> Pause | None:
        """The pause holding the requests now, with the header that asked for it, or ``None``.

        :param now: the limiter's clock.
        """
        paused_by = self.paused_by
        return paused_by if paused_by is not None and self.pause_until > now else None
