"""How many events came in the last second and in the busiest second of the last few: the rate a first refusal came
at (``_throttle.py``), a process's share of the fleet's sends (``_shared_limiter.py``); and what the platform accepted
of each second's sends (:class:`AcceptedPerSecond`)."""

from __future__ import annotations

BUCKETS = 10  # of 0.1 s each: a second
# Seconds remembered for the busiest second: an answer (or a refusal) comes a while after its request was let go
# (a connection pool's queue, a busy event loop), so the second before a refusal may hold none of the requests
# that led to it.
REMEMBERED = 3


class LastSecondCount:
    """Events of the last seconds, counted in buckets of 0.1 s: thirty integers, whatever the rate.

    Not locked: the limiter calls it under its lock, or, not throttled, from one event loop (a count lost to a
    race between a sync client's threads only makes a first refusal's rate a little low).
    """

    __slots__ = ("_at", "_buckets", "_kept")

    def __init__(self) -> None:
        self._kept = BUCKETS * REMEMBERED
        self._buckets = [0] * self._kept
        self._at = 0  # the newest bucket counted in (tenths of a second of the caller's clock)

    def add(self, now: float) -> None:
        """Count one event.

        :param now: monotonic seconds.
        """
        bucket = self._move(now)  # before indexing: moving may put a new list in place
        self._buckets[bucket % self._kept] += 1

    def total(self, now: float) -> float:
        """Events in the second before ``now``.

        :param now: monotonic seconds.
        """
        newest = self._move(now)
        return float(sum(self._buckets[(newest - back) % self._kept] for back in range(BUCKETS)))

    def busiest(self, now: float) -> float:
        """The most events in any second of the seconds remembered before ``now``.

        :param now: monotonic seconds.
        """
        newest = self._move(now)
        ordered = [self._buckets[(newest - back) % self._kept] for back in range(self._kept)]
        window = most = sum(ordered[:BUCKETS])
        for back in range(BUCKETS, self._kept):
            window += ordered[back] - ordered[back - BUCKETS]
            most = max(most, window)
        return float(most)

    def _move(self, now: float) -> int:
        """Empty the buckets that fell out of what is remembered; the bucket ``now`` falls in."""
        bucket = int(now * BUCKETS)
        if bucket - self._at >= self._kept:
            self._buckets = [0] * self._kept
        else:
            for stale in range(self._at + 1, bucket + 1):
                self._buckets[stale % self._kept] = 0
        self._at = max(self._at, bucket)
        return max(bucket, self._at)


# Seconds of sends and refusals kept for what the platform accepted (the store keeps as many: _store_link.py passes
# both constants to _store_script.lua).
ACCEPTED_SECONDS = 10
# While paced, a second holding fewer sends than this share of the pace says nothing of the limit (the store's too).
FULL_SECOND = 0.9


class AcceptedPerSecond:
    """What the platform accepted of one second's sends: the sends of each whole second (epoch seconds, the platform's
    windows) and the refusals of requests sent in it, for the last :data:`ACCEPTED_SECONDS` seconds.

    The same count the shared limiter's store keeps for a fleet (``_store_script.lua``, ``peek``), kept here for this
    process's own requests: at most 2 x 11 integers.
    """

    __slots__ = ("_refused", "_sends")

    def __init__(self) -> None:
        self._sends: dict[int, int] = {}
        self._refused: dict[int, int] = {}

    def sent(self, wall: float) -> None:
        """A request is sent now.

        :param wall: epoch seconds now.
        """
        second = int(wall // 1)
        self._sends[second] = self._sends.get(second, 0) + 1
        if len(self._sends) > ACCEPTED_SECONDS + 1:
            self._forget(second)

    def refused(self, sent_wall: float, wall: float) -> None:
        """A request sent at ``sent_wall`` was refused.

        :param sent_wall: epoch seconds when it was sent.
        :param wall: epoch seconds now.
        """
        second = int(sent_wall // 1)
        if wall - ACCEPTED_SECONDS < sent_wall <= wall + 1:
            self._refused[second] = self._refused.get(second, 0) + 1
            if len(self._refused) > ACCEPTED_SECONDS + 1:
                self._forget(int(wall // 1))

    def busiest(self, wall: float, full: float) -> int:
        """The most requests the platform accepted of one second's sends, among the seconds that held ``full`` sends
        or more (0: none did).

        :param wall: epoch seconds now.
        :param full: the fewest sends a second must hold to count.
        """
        self._forget(int(wall // 1))
        refused = self._refused
        seconds = list(self._sends.items())  # at once: a sync client's threads add sends without a lock
        accepted = (sends - min(sends, refused.get(second, 0)) for second, sends in seconds if sends >= full)
        return max(accepted, default=0)

    def sent_rate(self, wall: float) -> float:
        """Sends per second over the seconds kept: their count over the time since the first second (one at least).

        The rate a refusal came at when none of this process's requests was accepted (other processes took the
        window), as the store answers for a fleet whose sends it kept but none accepted.

        :param wall: epoch seconds now.
        """
        self._forget(int(wall // 1))
        seconds = list(self._sends.items())
        if not seconds:
            return 0.0
        return sum(sends for _, sends in seconds) / max(1.0, wall - min(second for second, _ in seconds))

    def _forget(self, second: int) -> None:
        oldest = second - ACCEPTED_SECONDS
        for counts in (self._sends, self._refused):
            # list() copies the keys at once: a sync client's threads add to the dicts without a lock
            for stale in [kept for kept in list(counts) if kept < oldest or kept > second + 1]:
                counts.pop(stale, None)
