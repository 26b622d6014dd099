"""Fixed-window rate limits per token: one per minute on the sandbox clock, and an optional one per second.

The per-minute limit counts on the sandbox clock, so ``advance`` also opens a new window (tests rely on it).
The per-second limit counts on the real wall clock (``time.time()``): tests freeze and advance the sandbox
clock to move state machines, and a limit measured in seconds on that clock would either never open a new
window (a frozen test) or open dozens at once (``advance(60)``), while the clients being limited pace
themselves on real time. Its windows are aligned to whole epoch seconds, so ``X-RateLimit-Reset`` is a
whole epoch second that the client can compare with its own clock.

A per-second limit that is not a whole number is kept, never exceeded: a window lasts 1 s when the limit is
at least 1 (allowing ``floor(limit)`` requests: 2.5/s allows 2 each second), else ``ceil(1 / limit)`` whole
seconds (allowing ``floor(limit * window)``, at least 1: 0.5/s allows 1 every 2 s, 0.3/s 1 every 4 s).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TypedDict

WINDOW_SECONDS = 60
# Float noise (1 / 0.1 is 10.000000000000002 on some inputs) must not lengthen a window by a whole second.
_ROUNDING_DIGITS = 9


@dataclass(frozen=True)
class RateDecision:
    """The outcome of counting one request, and the values of the ``X-RateLimit-*`` headers.

    :param allowed: whether the request may proceed.
    :param limit: requests allowed in the current window.
    :param remaining: requests left in it.
    :param reset_epoch: the epoch second the window ends.
    :param retry_after: whole seconds until then, at least 1 (the ``Retry-After`` of a refusal).
    :param rule: the limit in words (``20 requests per second``), for a refusal's message.
    :param visible: whether responses carry the ``X-RateLimit-*`` headers (``rate_limit_headers``).
    """

    allowed: bool
    limit: int
    remaining: int
    reset_epoch: int
    retry_after: int
    rule: str = ""
    visible: bool = True

    def headers(self) -> list[tuple[str, str]]:
        """The rate-limit headers every response carries (none when they are switched off)."""
        if not self.visible:
            return []
        return [
            ("x-ratelimit-limit", str(self.limit)),
            ("x-ratelimit-remaining", str(self.remaining)),
            ("x-ratelimit-reset", str(self.reset_epoch)),
        ]

    def refusal_message(self) -> str:
        """The message of the 429 a refused request gets."""
        return f"rate limit of {self.rule} exceeded; retry in {self.retry_after} s"


class RateLimitStats(TypedDict):
    """The per-second limit's settings and counters (``GET /_sandbox/rate-limit``)."""

    per_second: float | None
    headers: bool
    allowed: int
    refused: int


def per_second_problem(value: object) -> str | None:
    """What is wrong with ``value`` as a per-second limit, or None when it is usable (None: no limit).

    :param value: the limit as given (a number of requests per second, or None).
    """
    if value is None:
        return None
    # An int is never infinite (and one too large for a float must not reach math.isfinite).
    usable = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not usable or value <= 0:
        return f"must be a finite number of requests per second over 0, or null for no limit, not {value!r}"
    return None


def per_second_window(per_second: float) -> tuple[int, int]:
    """The window length in whole seconds and the requests allowed in each, for a limit per second.

    :param per_second: the limit, over 0.
    """
    window = 1 if per_second >= 1 else math.ceil(round(1 / per_second, _ROUNDING_DIGITS))
    return window, max(1, math.floor(round(per_second * window, _ROUNDING_DIGITS)))


def _requests_per_second(per_second: float) -> str:
    shown = int(per_second) if isinstance(per_second, float) and per_second.is_integer() else per_second
    return f"{shown} requests per second"


class RateLimiter:
    """Counts requests per key in one-minute windows of the sandbox clock.

    :param per_minute: requests allowed per key and window.
    """

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._windows: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def _decision(self, count: int, window: int, now: datetime, allowed: bool) -> RateDecision:
        reset_epoch = (window + 1) * WINDOW_SECONDS
        retry_after = max(1, math.ceil(reset_epoch - now.timestamp()))
        remaining = max(0, self.per_minute - count)
        rule = f"{self.per_minute} requests per minute"
        return RateDecision(allowed, self.per_minute, remaining, reset_epoch, retry_after, rule)

    def hit(self, key: str, now: datetime) -> RateDecision:
        """Count one request for ``key`` and decide whether it may proceed.

        :param key: what is limited (the token).
        :param now: the sandbox time.
        """
        window = int(now.timestamp() // WINDOW_SECONDS)
        with self._lock:
            started, count = self._windows.get(key, (window, 0))
            if started != window:
                count = 0
            if count >= self.per_minute:
                return self._decision(count, window, now, allowed=False)
            self._windows[key] = (window, count + 1)
            return self._decision(count + 1, window, now, allowed=True)

    def peek(self, key: str | None, now: datetime) -> RateDecision:
        """The headers for a response that was answered before counting (faults, 401, 413).

        :param key: the token, when known.
        :param now: the sandbox time.
        """
        window = int(now.timestamp() // WINDOW_SECONDS)
        with self._lock:
            started, count = self._windows.get(key or "", (window, 0))
        return self._decision(count if started == window else 0, window, now, allowed=True)

    def clear(self) -> None:
        """Forget all counts."""
        with self._lock:
            self._windows.clear()


class RateLimits:
    """Both limits of a sandbox, the switch for their headers, and what the per-second one let through.

    A request must pass both limits. The per-second one is checked first, and a request counts towards a
    limit's allowance only when both let it through, so a refusal never uses up allowance. The
    ``X-RateLimit-*`` headers describe the per-second limit when it is set, except on a 429 of the
    per-minute one, whose headers describe that limit (``Remaining: 0`` and the ``Reset`` its
    ``Retry-After`` points at, not a per-second allowance the client may not use).

    Memory is one count per token that sent a request in the current per-second window: every token's
    window starts at the same epoch second, so a new window drops all the old counts at once.

    :param per_minute: requests each token may make per one-minute window of the sandbox clock.
    :param per_second: requests each token may make per second of the wall clock (None: no such limit).
    :param headers: whether responses carry the ``X-RateLimit-*`` headers.
    :param wall_clock: the real time in epoch seconds (``time.time``; a fixed one for tests of the windows).
    """

    def __init__(
        self,
        per_minute: int,
        per_second: float | None = None,
        headers: bool = True,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._configured = (per_second, headers)
        self._minute = RateLimiter(per_minute)
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self._per_second: float | None = None
        self._headers = True
        self._window_seconds, self._allowance = 1, 0
        self._window: int | None = None
        self._counts: dict[str, int] = {}
        self._allowed = self._refused = 0
        self.configure(per_second, headers)

    def configure(self, per_second: float | None, headers: bool = True) -> None:
        """Change the per-second limit and the headers switch while the server runs.

        Counts of the current window are kept when the window length stays the same (so lowering the
        limit takes effect at once), and dropped when it changes; the allowed/refused counters go on.

        :param per_second: requests per second per token, over 0; None turns the per-second limit off.
        :param headers: whether responses carry the ``X-RateLimit-*`` headers (``Retry-After`` stays).
        :raises ValueError: ``per_second`` is not a finite number over 0 or None, or ``headers`` no bool.
        """
        problem = per_second_problem(per_second)
        if problem is not None:
            raise ValueError(f"per_second {problem}")
        if not isinstance(headers, bool):
            raise ValueError(f"headers must be True or False, not {headers!r}")
        with self._lock:
            window_seconds, allowance = per_second_window(per_second) if per_second is not None else (1, 0)
            if window_seconds != self._window_seconds:
                self._window, self._counts = None, {}
            self._per_second, self._headers = per_second, headers
            self._window_seconds, self._allowance = window_seconds, allowance

    def reset(self) -> None:
        """Back to the configured settings, with no counts and both counters at zero."""
        self.configure(*self._configured)
        with self._lock:
            self._window, self._counts = None, {}
            self._allowed = self._refused = 0
        self._minute.clear()

    def hit(self, key: str, sandbox_now: datetime) -> RateDecision:
        """Count one request for ``key`` against both limits and decide whether it may proceed.

        :param key: what is limited (the token).
        :param sandbox_now: the sandbox time (for the per-minute limit).
        """
        with self._lock:
            if self._per_second is None:
                return replace(self._minute.hit(key, sandbox_now), visible=self._headers)
            now = self._wall_clock()
            window = self._current_window(now)
            count = self._counts.get(key, 0)
            if count >= self._allowance:
                self._refused += 1
                return self._decision(count, window, now, allowed=False)
            minute = self._minute.hit(key, sandbox_now)
            if not minute.allowed:
                return replace(minute, visible=self._headers)
            self._counts[key] = count + 1
            self._allowed += 1
            return self._decision(count + 1, window, now, allowed=True)

    def peek(self, key: str | None, sandbox_now: datetime) -> RateDecision:
        """The headers for a response that was answered before counting (faults, 401, 413).

        :param key: the token, when known (an unknown one is not remembered).
        :param sandbox_now: the sandbox time (for the per-minute limit).
        """
        with self._lock:
            if self._per_second is None:
                return replace(self._minute.peek(key, sandbox_now), visible=self._headers)
            now = self._wall_clock()
            window = self._current_window(now)
            return self._decision(self._counts.get(key or "", 0), window, now, allowed=True)

    def stats(self) -> RateLimitStats:
        """The per-second settings, and the requests it let through and refused since the last reset.

        Requests are counted only while a per-second limit is set.
        """
        with self._lock:
            return RateLimitStats(
                per_second=self._per_second, headers=self._headers, allowed=self._allowed, refused=self._refused
            )

    @property
    def tracked_tokens(self) -> int:
        """How many tokens have a count in the current per-second window (all the memory the limit holds)."""
        with self._lock:
            return len(self._counts)

    def _current_window(self, now: float) -> int:
        """The window ``now`` falls in; entering a new one drops every count of the old one. Lock held."""
        window = int(now // self._window_seconds)
        # A wall clock stepped back (NTP) must not reopen a window already counted: keep the newest one.
        if self._window is None or window > self._window:
            self._window, self._counts = window, {}
        return self._window

    def _decision(self, count: int, window: int, now: float, allowed: bool) -> RateDecision:
        assert self._per_second is not None
        reset_epoch = (window + 1) * self._window_seconds
        retry_after = max(1, math.ceil(reset_epoch - now))
        remaining = max(0, self._allowance - count)
        rule = _requests_per_second(self._per_second)
        return RateDecision(allowed, self._allowance, remaining, reset_epoch, retry_after, rule, self._headers)
