"""The pace of a throttled account (``_throttle.py``): how fast its requests may go, and how many in a span.

Two parts of the limiter that keep no turns and no pauses, written apart so that each can be read alone:

- :func:`probe_rate`, the cubic probe. Without ``X-RateLimit-*`` headers the only news of the limit is a refusal:
  the rate it came at is a ceiling; the pace restarts just under it and creeps back over it slowly (as TCP CUBIC
  probes a path), so the platform refuses about one request per probe instead of four per answer.
- :class:`SendSpan`, the sends of the last span: late sends (a busy event loop) may catch up, but no span of
  :data:`SPAN_SECONDS` holds more sends than the pace allows, or the platform's window sees one send too many.

:class:`Turn`, a request's place in the queue, is a plain value kept here so that the limiter's module holds its
logic (its queue, its pauses) and stays readable in one sitting.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

# A pace is never below this (requests per second): a limit that low is paced by its pauses.
MIN_RATE = 0.5
# The pace restarts at this share of the rate a refusal came at, and crosses it again after PROBE_SECONDS.
RESTART_SHARE = 0.97
PROBE_SECONDS = 120.0
# The probe grows as if the ceiling were at least this many requests per second, so that a refusal that
# came when little was sent (a ceiling near zero) does not hold the pace near zero for long.
PROBE_FLOOR = 10.0
# Refusals under the headers' cap (other processes on the token) cut this process's pace to no less than this share
# of the cap: it yields room to the others without letting a burst of their refusals starve its own waits.
HEADER_FLOOR_SHARE = 0.5
# No span of this many seconds holds more sends than the pace allows in it: a window of the platform that sees
# one send more refuses it (or reads Remaining 0 and pauses everyone). Sends that came late (a busy event loop)
# may catch up within it. At most SENT_LOG_MAX send times are kept; a faster pace checks a shorter span.
SPAN_SECONDS = 1.0
SENT_LOG_MAX = 2048


@dataclass(frozen=True)
class Turn:
    """A request's place in the queue of a throttled account (``_throttle.py`` numbers and serves them).

    :param number: the turn's number; turns are served in order of their numbers.
    :param asked_at: when it was taken (monotonic seconds).
    """

    number: int
    asked_at: float


def probe_rate(ceiling: float, header_cap: float | None, elapsed: float) -> float:
    """The pace ``elapsed`` seconds after pacing (re)started: just under the ceiling at first, over it after
    :data:`PROBE_SECONDS`, faster after that; never over the headers' cap, nor under :data:`MIN_RATE`.

    :param ceiling: the rate the last refusal came at (0: no refusal yet).
    :param header_cap: the fastest pace the ``X-RateLimit-*`` headers allow, if they came.
    :param elapsed: seconds since the pace restarted.
    """
    if header_cap is not None and not ceiling:  # the headers alone: they say what is allowed
        return header_cap
    probe = max(ceiling, PROBE_FLOOR) * (1 - RESTART_SHARE) * (max(0.0, elapsed) / PROBE_SECONDS) ** 3
    rate = ceiling * RESTART_SHARE + probe
    if header_cap is not None:
        rate = min(max(rate, HEADER_FLOOR_SHARE * header_cap), header_cap)
    return max(MIN_RATE, rate)


class SendSpan:
    """The latest send times (at most :data:`SENT_LOG_MAX` floats), and when the span's budget has room."""

    def __init__(self) -> None:
        self._sent: deque[float] = deque(maxlen=SENT_LOG_MAX)

    def add(self, now: float) -> None:
        """A request is sent at ``now`` (monotonic seconds)."""
        self._sent.append(now)

    def clear(self) -> None:
        """Forget every send: pacing starts afresh."""
        self._sent.clear()

    def gate(self, now: float, rate: float) -> float:
        """When the span's budget at ``rate`` next has room: ``now``, or when the oldest send in it leaves the span.

        :param now: monotonic seconds.
        :param rate: the pace, requests per second.
        """
        budget = max(1, min(SENT_LOG_MAX, math.floor(rate * SPAN_SECONDS)))
        span = SPAN_SECONDS if budget < SENT_LOG_MAX else budget / rate
        while self._sent and self._sent[0] <= now - span:
            self._sent.popleft()
        if len(self._sent) < budget:
            return now
        return self._sent[-budget] + span
