"""Fixed-window rate limiting per token, on the sandbox clock (so ``advance`` also opens a new window)."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from datetime import datetime

WINDOW_SECONDS = 60


@dataclass(frozen=True)
class RateDecision:
    """The outcome of counting one request, and the values of the ``X-RateLimit-*`` headers."""

    allowed: bool
    limit: int
    remaining: int
    reset_epoch: int
    retry_after: int

    def headers(self) -> list[tuple[str, str]]:
        """The rate-limit headers every response carries."""
        return [
            ("x-ratelimit-limit", str(self.limit)),
            ("x-ratelimit-remaining", str(self.remaining)),
            ("x-ratelimit-reset", str(self.reset_epoch)),
        ]


class RateLimiter:
    """Counts requests per key in one-minute windows.

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
        return RateDecision(allowed, self.per_minute, remaining, reset_epoch, retry_after)

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
