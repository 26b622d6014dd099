"""Progress lines for long transfers (report downloads, chart exports): how far, how fast, how long still.

A transfer that ends within one interval logs nothing here (its caller's own closing line is enough); a
longer one logs a line every interval, whatever the chunk or row rate, and a final line when it ends.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Literal, Protocol

log = logging.getLogger("airflow_provider_analytics.wire")

# Seconds between progress lines: often enough to show a transfer is alive, rare enough for a 1 GiB file
# (a minute or two) to log a handful of lines, not one per chunk.
PROGRESS_INTERVAL = 10.0
_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")

Unit = Literal["bytes", "rows"]


class InfoLog(Protocol):
    """What INFO lines are logged through: a ``logging.Logger``, or an operator's, hook's or trigger's ``self.log``
    (Airflow's logger type differs by release)."""

    def info(self, msg: Any, /, *args: Any) -> Any: ...


def _amount(count: float, unit: Unit) -> str:
    if unit == "rows":
        return f"{count:,.0f} {'row' if round(count) == 1 else 'rows'}"
    size = float(count)
    for name in _BINARY_UNITS:
        if size < 1024 or name == _BINARY_UNITS[-1]:
            return f"{size:.0f} {name}" if name == "B" else f"{size:.1f} {name}"
        size /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def _duration(seconds: float) -> str:
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


class TransferProgress:
    """Logs a transfer's progress at a steady pace; feed it the running count, as often as is convenient.

    :param what: how lines name the transfer (``report rp_1``, ``chart ch_1 to /data/rows.csv``).
    :param unit: ``bytes`` or ``rows``.
    :param total: the whole transfer's size in ``unit``, when known: lines then give percent and time left.
    :param log: where the lines go.
    :param interval: seconds between lines; the first comes after one interval.
    :param clock: monotonic seconds (injectable, so tests drive the pace without sleeping).
    """

    def __init__(
        self,
        what: str,
        unit: Unit = "bytes",
        *,
        total: int | None = None,
        log: InfoLog = log,
        interval: float = PROGRESS_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what = what
        self.unit: Unit = unit
        self.total = total  # may change: a download that restarts learns the new file's size
        self.lines = 0
        self._log = log
        self._interval = interval
        self._clock = clock
        self._started = clock()
        self._next_line = self._started + interval

    def update(self, done: int) -> None:
        """Note the running count; logs a line when an interval has passed since the last one.

        :param done: bytes (or rows) transferred so far.
        """
        now = self._clock()
        if now < self._next_line:
            return
        # From now, not from the missed mark: a transfer stalled for minutes logs one line, not a burst.
        self._next_line = now + self._interval
        self.lines += 1
        self._log.info("%s: %s", self.what, self.describe(done, now))

    def finish(self, done: int) -> None:
        """Log the closing line, if any progress line was logged (a short transfer stays one line).

        :param done: bytes (or rows) transferred in all.
        """
        if not self.lines:
            return
        elapsed = self._clock() - self._started
        self._log.info(
            "%s: finished, %s in %s (%s)",
            self.what,
            _amount(done, self.unit),
            _duration(elapsed),
            self._rate(done, elapsed),
        )

    def describe(self, done: int, now: float) -> str:
        """One progress line's text: amount (and percent), time so far, rate (and time left).

        :param done: bytes (or rows) transferred so far.
        :param now: the clock's time.
        """
        elapsed = now - self._started
        amount = _amount(done, self.unit)
        if self.total:
            amount += f" of {_amount(self.total, self.unit)} ({100 * done / self.total:.1f} %)"
        line = f"{amount} after {_duration(elapsed)}, {self._rate(done, elapsed)}"
        if self.total and done > 0 and elapsed > 0:
            line += f", about {_duration(max(0, self.total - done) * elapsed / done)} left"
        return line

    def _rate(self, done: int, elapsed: float) -> str:
        per_second = done / elapsed if elapsed > 0 else 0.0
        return f"{_amount(per_second, self.unit)}/s"
