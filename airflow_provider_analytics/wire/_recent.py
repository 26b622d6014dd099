"""How many answers succeeded in the last second: the rate a first refusal came at (``_throttle.py``)."""

from __future__ import annotations

BUCKETS = 10  # of 0.1 s each


class LastSecondCount:
    """Events of the last second, counted in ten buckets of 0.1 s: ten integers, whatever the rate.

    Not locked: the limiter calls it under its lock, or, not throttled, from one event loop (a count lost to a
    race between a sync client's threads only makes a first refusal's rate a little low).
    """

    __slots__ = ("_at", "_buckets")

    def __init__(self) -> None:
        self._buckets = [0] * BUCKETS
        self._at = 0  # the newest bucket counted in (tenths of a second of the caller's clock)

    def add(self, now: float) -> None:
        """Count one event.

        :param now: monotonic seconds.
        """
        bucket = self._move(now)  # before indexing: moving may put a new list in place
        self._buckets[bucket % BUCKETS] += 1

    def total(self, now: float) -> float:
        """Events in the second before ``now``.

        :param now: monotonic seconds.
        """
        self._move(now)
        return float(sum(self._buckets))

    def _move(self, now: float) -> int:
        """Empty the buckets that fell out of the last second; the bucket ``now`` falls in."""
        bucket = int(now * BUCKETS)
        if bucket - self._at >= BUCKETS:
            self._buckets = [0] * BUCKETS
        else:
            for stale in range(self._at + 1, bucket + 1):
                self._buckets[stale % BUCKETS] = 0
        self._at = max(self._at, bucket)
        return bucket
