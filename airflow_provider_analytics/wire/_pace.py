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

import bisect
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
# Share of a window's limit paced when the X-RateLimit headers give it: room for a send that lands in the next window.
HEADER_SHARE = 0.97
# No span of this many seconds holds more sends than the pace allows in it: a window of the platform that sees
# one send more refuses it (or reads Remaining 0 and pauses everyone). Sends that came late (a busy event loop)
# may catch up within it. At most SENT_LOG_MAX send times are kept; a faster pace checks a shorter span.
SPAN_SECONDS = 1.0
SENT_LOG_MAX = 2048
# Sends that came late may catch up by this much over the pace within a span. The pace leaves the platform a margin
# of 3 % (HEADER_SHARE, RESTART_SHARE), so a span at the pace times this still holds less than the limit; with no
# room at all, every late send (a busy event loop, a store's round trip) was lost for good: 93.6 sends a second of a
# pace of 97 on a quiet machine, a fleet of 4 to 64 processes through the store.
CATCH_UP = 1.025
# A request waiting for its turn asks again at least this often (a pace learnt meanwhile may bring it forward).
RECHECK_SECONDS = 1.0


@dataclass(frozen=True)
class Turn:
    """A request's place in the queue of a throttled account (``_throttle.py`` numbers and serves them).

    :param number: the turn's number; turns are served in order of their numbers.
    :param asked_at: when it was taken (monotonic seconds).
    """

    number: int
    asked_at: float


def span_budget(rate: float) -> int:
    """The most sends one span may hold at ``rate``: the pace's own count, plus :data:`CATCH_UP`'s room for late ones.

    :param rate: the pace, requests per second.
    """
    at_pace = math.ceil(rate * SPAN_SECONDS - 1e-9)
    caught_up = math.floor(rate * SPAN_SECONDS * CATCH_UP + 1e-9)
    return max(1, min(SENT_LOG_MAX, max(at_pace, caught_up)))


def probe_rate(ceiling: float, header_cap: float | None, elapsed: float) -> float:
    """The pace ``elapsed`` seconds after pacing (re)started: just under the ceiling at first, over it after
    :data:`PROBE_SECONDS`, faster after that; never over the headers' cap, nor under :data:`MIN_RATE`.

    :param ceiling: the rate the last refusal came at (0: no refusal yet).
    :param header_cap: the fastest pace the ``X-RateLimit-*`` headers allow, if they came.
    :param elapsed: seconds since the pace restarted.
    """
    if header_cap is not None and not ceiling:  # the headers alone: they say what is allowed
        return max(MIN_RATE, header_cap)
    elapsed = min(max(0.0, elapsed), 100 * PROBE_SECONDS)  # a day on the curve is past any limit; never overflows
    probe = max(ceiling, PROBE_FLOOR) * (1 - RESTART_SHARE) * (elapsed / PROBE_SECONDS) ** 3
    rate = ceiling * RESTART_SHARE + probe
    if header_cap is not None:
        rate = min(rate, header_cap)
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
        budget = span_budget(rate)
        span = SPAN_SECONDS if budget < SENT_LOG_MAX else budget / rate
        while self._sent and self._sent[0] <= now - span:
            self._sent.popleft()
        if len(self._sent) < budget:
            return now
        return self._sent[-budget] + span


class LocalQueue:
    """The turns of one process's limiter (``_throttle.py``): who goes next, and when.

    Turn k may go at ``anchor_time + (k - anchor_turn) / rate``, and no span of :data:`SPAN_SECONDS` holds more
    sends than the pace allows (:class:`SendSpan`). The store's queue (``_shared_limiter.py``) keeps the same
    schedule in its script, for every process of a fleet.
    """

    __slots__ = ("_gone", "_sent", "anchor_time", "anchor_turn", "next_turn", "rate", "served")

    def __init__(self) -> None:
        self.next_turn = 0
        self.served = 0  # one past the highest turn sent
        self.anchor_turn = 0
        self.anchor_time = 0.0
        self.rate = MIN_RATE
        self._sent = SendSpan()
        self._gone: list[int] = []  # turns given up and not yet passed, sorted: they take no place in the schedule

    def due(self, number: int) -> float:
        """When turn ``number`` may go on the schedule (before the span's budget and any pause)."""
        skipped = 0
        if self._gone:
            skipped = bisect.bisect_left(self._gone, number) - bisect.bisect_left(self._gone, self.anchor_turn)
        return self.anchor_time + (number - self.anchor_turn - max(0, skipped)) / self.rate

    def forget(self, turn: Turn) -> None:
        """The turn's request gave up waiting (its deadline): the turns after it move up by its place.

        :param turn: from :meth:`take`.
        """
        if self.served <= turn.number < self.next_turn:
            bisect.insort(self._gone, turn.number)

    def take(self, now: float, pause_until: float) -> Turn:
        """A new turn, after every turn taken before it.

        :param now: the limiter's clock.
        :param pause_until: no turn goes before this.
        """
        start = max(now, pause_until)
        if self.due(self.next_turn) < start:  # idle time earns no burst of turns
            self.anchor_turn, self.anchor_time = self.next_turn, start
        turn = Turn(self.next_turn, now)
        self.next_turn += 1
        return turn

    def delay(self, turn: Turn, now: float, pause_until: float) -> float:
        """Seconds to sleep before asking again (0 or less: the turn may go now).

        :param turn: from :meth:`take`.
        :param now: the limiter's clock.
        :param pause_until: no turn goes before this.
        """
        gate = max(pause_until, self._sent.gate(now, self.rate))
        due = self.due(turn.number)
        if due < gate and gate > now and turn.number >= self.served:
            # The schedule fell behind what may be sent (the second's budget is spent, or a pause): this turn goes
            # at the gate and the later ones after it, so turns keep their order instead of racing for the gate.
            # A turn that is merely late (a busy loop) moves nothing: late sends catch up.
            self.anchor_turn, self.anchor_time = turn.number, gate
            due = gate
        if pause_until >= due:
            return pause_until - now  # nothing changes a pause but a longer one: sleep it whole
        # A faster pace (learnt meanwhile) brings turns forward: ask again at least this often.
        return min(max(gate, due) - now, RECHECK_SECONDS)

    def sent(self, turn: Turn, now: float) -> None:
        """The turn's request is being sent now.

        :param turn: from :meth:`take`.
        :param now: the limiter's clock.
        """
        self._sent.add(now)
        self.served = max(self.served, turn.number + 1)
        if self._gone and self._gone[0] < self.served:
            # Turns given up that the queue now passes are dropped, the schedule anchored past them first: no turn
            # after them moves back.
            self.anchor_time, self.anchor_turn = self.due(self.served), self.served
            del self._gone[: bisect.bisect_left(self._gone, self.served)]

    @property
    def waiting(self) -> int:
        """Turns taken and not yet sent nor given up."""
        return max(0, self.next_turn - self.served - len(self._gone))

    def apply(self, op: tuple[str, float] | tuple[str, float, float]) -> None:
        """Carry out what the learnt state says the queue must do (``_learning.QueueOp``)."""
        if op[0] == "start":
            self.anchor_turn, self.anchor_time = self.next_turn, op[1]
            self.served = self.next_turn
            self.rate = MIN_RATE
            self._sent.clear()
            self._gone.clear()
        elif op[0] == "restart" and len(op) == 3:
            self.anchor_turn, self.anchor_time, self.rate = self.served, op[1], max(MIN_RATE, op[2])
        elif op[0] == "rate" and len(op) == 3:
            # From now on at the new pace, keeping every waiting turn's order (turns due by now stay due).
            rate, now = op[1], op[2]
            due_now = self.anchor_turn + max(0.0, now - self.anchor_time) * self.rate
            self.anchor_turn, self.anchor_time = math.ceil(due_now), max(now, self.anchor_time)
            self.rate = max(MIN_RATE, rate)
        elif op[0] == "pause":
            self.anchor_turn, self.anchor_time = self.served, op[1]
