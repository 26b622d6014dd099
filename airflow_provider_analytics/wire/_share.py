"""A process's share of its token's limit, learnt from ``X-RateLimit-Remaining`` when other processes use the token too.

The headers count every request of the token, whatever process sent it: ``Remaining`` falls faster than this process
sends when others send as well. Without a store to share, each process paces at its share of the headers' cap
(``_learning.HEADER_SHARE`` of the limit per window), and the shares are learnt the way TCP flows share a path
(additive increase, multiplicative decrease), once per platform window, from what the window showed:

- **used up** (an answer said ``Remaining: 0``, or a refusal came): the fleet asked for too much; the share is cut by
  :data:`CUT`. Every process that saw it cuts, so the shares keep their ratio and shrink together: a bigger share
  gives up more, and the processes' shares converge. A window this process used up alone (its own successful
  answers were all of its limit) says nobody else sends: the share is whole again (a process alone on the token,
  whose start-up burst used windows up, would otherwise pace at a fraction of the limit for minutes).
- **on its way to overrun** (projected from the window's last answer this process saw, at least half-way through
  it): cut in proportion, so that the fleet would have used the cap;
- **otherwise**: the share grows by :data:`GROWTH` of the cap, times how long this process's requests wait for their
  turn (:func:`pressure`: 1 at :data:`PRESSURE_WAIT` seconds, between 0.5 and 4), so that a process that has little
  for what it asks catches up, and room left by a process that stopped is taken. Growth alike for every process only
  evens out the shares a few per cent per window: sixteen processes that began pacing at shares of 1 to 12 % (what a
  start-up burst happened to leave each) still held 3 to 8 % a minute later, their slowest waits 2.6x the floor. Growth
  by the wait is what TCP's fairness lacks and a queue of waits has: the process that is short of its share knows it.

A share starts, when pacing starts, at this process's part of what the window has used so far (its successful
answers in the window over ``Limit - Remaining``, or over what the window used since its first answer, whichever is
more: a process that began sending late in the window is not taken for a small one): one process alone starts with
all of it, one of sixteen with a sixteenth. Nothing is assumed about how many processes there are: no floor lets
several together ask for more than the limit. A limiter that every process shares through a store
(``_shared_limiter.py``) is the fleet's own: its share stays whole.
"""

from __future__ import annotations

from airflow_provider_analytics.wire._pace import HEADER_SHARE, MIN_RATE

__all__ = ["CUT", "GROWTH", "ShareOfLimit", "pressure"]

# A window used up cuts the share to this.
CUT = 0.85
# A window that held is followed by this much more share (of the cap), times the pressure on the queue.
GROWTH = 0.002
# The pressure is 1 when this process's requests wait this long for their turn; it stays between these bounds.
PRESSURE_WAIT = 5.0
PRESSURE_LEAST = 0.5
PRESSURE_MOST = 4.0
# The projection of a window's use needs an answer at least this far into it.
PROJECT_FROM = 0.5
# The least share kept (a process never stops sending altogether: its pace has MIN_RATE anyway).
LEAST = 0.005


def pressure(waiting: int, rate: float) -> float:
    """How fast a share grows for how long this process's requests wait for their turn: 1 at :data:`PRESSURE_WAIT`.

    :param waiting: requests waiting for their turn.
    :param rate: the pace, requests per second.
    """
    return min(PRESSURE_MOST, max(PRESSURE_LEAST, waiting / max(MIN_RATE, rate) / PRESSURE_WAIT))


class ShareOfLimit:
    """This limiter's share of the token's limit (see the module's docstring).

    :param learns: whether it learns at all (``False`` for the limiter a fleet shares through a store: whole).
    """

    __slots__ = (
        "_exhausted",
        "_first",
        "_left",
        "_limit",
        "_own",
        "_remaining",
        "_reset",
        "_urge",
        "learns",
        "pacing",
        "value",
    )

    def __init__(self, learns: bool = True) -> None:
        self.learns = learns
        self.value = 1.0
        self.pacing = False  # learnt only while the pace follows the headers
        self._reset: float | None = None  # the window being watched
        self._exhausted = False
        self._remaining: int | None = None  # the last successful answer's Remaining in it
        self._left = 0.0  # and the seconds that were left of the window then
        self._limit = 0
        self._own = 0  # this process's successful answers in the window
        self._urge = 0.0  # the most pressure (:func:`pressure`) its queue was under in the window
        self._first: int | None = None  # the highest Remaining among them: the window's use between its first and last

    def started(self, remaining: int) -> None:
        """Pacing starts: the share is this process's part of what the window has used so far.

        :param remaining: the window's ``Remaining`` now.
        """
        if self.learns:
            self.pacing = True
            used = self._limit - remaining
            share = self._own / used if used > 0 and self._own else 1.0
            if self._own >= 3 and self._first is not None and self._first > remaining:
                # Its own answers and the window's use between its first answer and now: a process that started
                # sending late in the window is not taken for a small one.
                share = max(share, (self._own - 1) / (self._first - remaining))
            self.value = min(1.0, max(LEAST, share))

    def stopped(self) -> None:
        """Pacing ended: nothing is learnt until it starts again."""
        self.pacing = False

    def observe(
        self, reset: float, remaining: int, limit: int, ok: bool, window: float | None, left: float, urge: float = 1.0
    ) -> None:
        """One answer's headers (a refusal's too: it says the window is used up).

        :param reset: its window's ``Reset`` (epoch seconds).
        :param remaining: requests left in that window.
        :param limit: requests allowed in it.
        :param ok: whether the answer succeeded.
        :param window: the platform's window, when known.
        :param left: seconds left in the window by this host's clock.
        :param urge: the pressure on this process's queue now (:func:`pressure`); the window's highest counts.
        """
        if not self.learns:
            return
        if limit != self._limit:
            self._reset = None  # a new limit is a new policy: the window watched is over and says nothing of it
        if self._reset is None or reset > self._reset:
            self._close(window)
            self._reset, self._exhausted, self._remaining, self._limit, self._own = reset, False, None, limit, 0
            self._urge = 0.0
            self._first = None
        elif reset < self._reset:
            return  # a late answer of a window already closed
        self._urge = max(self._urge, urge)
        if ok:
            self._own += 1
            self._first = remaining if self._first is None else max(self._first, remaining)
        if not ok or remaining == 0:
            self._exhausted = True
        elif self._remaining is None or remaining < self._remaining:
            self._remaining, self._left = remaining, left

    def _close(self, window: float | None) -> None:
        """What the window that just ended showed, for the share (only while pacing)."""
        if not self.pacing or self._reset is None:
            return
        value = self.value
        growth = GROWTH * (self._urge or 1.0)
        if self._exhausted and self._own >= self._limit:
            value = 1.0  # this process alone used the window up: nobody else sends on the token; pacing is its own
        elif self._exhausted:
            value *= CUT
        elif window and self._remaining is not None and (window - self._left) / window >= PROJECT_FROM:
            used = (self._limit - self._remaining) / min(1.0, (window - self._left) / window)
            allowed = HEADER_SHARE * self._limit
            value = value * max(CUT, allowed / used) if used > allowed else value + growth
        else:
            value += growth
        self.value = min(1.0, max(LEAST, value))
