"""The sandbox clock: real UTC time plus an offset that tests move forward with ``advance``."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta


class SandboxClock:
    """A thread-safe clock whose notion of "now" can be moved forward but never backward."""

    def __init__(self) -> None:
        self._offset = timedelta()
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """The current sandbox time (timezone-aware UTC)."""
        with self._lock:
            offset = self._offset
        return datetime.now(UTC) + offset

    def advance(self, seconds: float) -> None:
        """Move the clock forward.

        :param seconds: how far to move; must not be negative.
        """
        if seconds < 0:
            raise ValueError("the sandbox clock only moves forward")
        with self._lock:
            self._offset += timedelta(seconds=seconds)

    def reset(self) -> None:
        """Go back to real time."""
        with self._lock:
            self._offset = timedelta()


def rfc3339(moment: datetime | None) -> str | None:
    """Format a time as RFC 3339 UTC with microseconds, e.g. ``2026-11-21T10:00:00.123456Z``.

    Microseconds matter: with test timings a sync finishes a fraction of a second after the time a
    sensor waits for, and a rounded timestamp could land before it.

    :param moment: a timezone-aware time, or None.
    """
    if moment is None:
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
