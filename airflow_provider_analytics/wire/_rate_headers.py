"""The ``X-RateLimit-*`` headers of an answer, checked before the rate limiter (``_throttle.py``) believes them,
and the :class:`Pause` a header asks for.

The contract (section 3) says an answer may carry the requests allowed in the current window, those left in it,
and the epoch second it resets; a platform may send none, and a broken or hostile one may send anything. Values
that are not plain whole numbers in range are ignored, so they can neither pause the client nor make it spin.
A value that is believed can still ask for a long pause (a ``Reset`` up to a day ahead, a ``Retry-After`` of
years): the limiter holds the token's requests for at most the client's ``max_retry_after`` (:class:`Pause`).
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.wire._deadline import pause_waits_allowed
from airflow_provider_analytics.wire.errors import RateLimitedError

if TYPE_CHECKING:
    from airflow_provider_analytics.wire.config import ClientConfig

# Header values past these bounds are ignored as nonsense rather than obeyed.
MAX_HEADER_LIMIT = 10_000_000
MAX_WINDOW_SECONDS = 86_400.0


@dataclass(frozen=True)
class RateHeaders:
    """The ``X-RateLimit-*`` values of one answer, checked.

    :param limit: requests allowed in the current window.
    :param remaining: requests left in it.
    :param reset_epoch: epoch seconds when it resets, when given and believable.
    """

    limit: int
    remaining: int
    reset_epoch: float | None

    @classmethod
    def parse(cls, headers: Mapping[str, str], now_epoch: float) -> RateHeaders | None:
        """The headers of an answer, or ``None`` when absent or not believable (then nothing is learnt).

        :param headers: the answer's headers (case-insensitive mapping).
        :param now_epoch: the current epoch time.
        """
        limit = _whole(headers.get("X-RateLimit-Limit"), 1, MAX_HEADER_LIMIT)
        remaining = _whole(headers.get("X-RateLimit-Remaining"), 0, MAX_HEADER_LIMIT)
        if limit is None or remaining is None:
            return None
        reset = _whole(headers.get("X-RateLimit-Reset"), 0, 10**11)
        believable = reset is not None and now_epoch - 5 <= reset <= now_epoch + MAX_WINDOW_SECONDS
        return cls(limit, min(remaining, limit), float(reset) if believable and reset is not None else None)


# A host whose clock is this far from the platform's (its answers' ``Date``) reads ``Reset`` by the platform's clock.
SKEW_SECONDS = 2.0


def platform_wall(headers: Mapping[str, str], local: float) -> float:
    """Epoch seconds now as the platform counts them, to read ``X-RateLimit-Reset`` against.

    This host's clock, unless the answer's ``Date`` says it is more than :data:`SKEW_SECONDS` off (a host whose clock
    is a minute behind would read a one-second window's ``Reset`` as a minute away, and hold the token for it). ``Date``
    has whole seconds only, so it corrects only a clock that is far off.

    :param headers: the answer's headers.
    :param local: this host's epoch seconds now.
    """
    text = headers.get("Date")
    if not text or len(text) > 64:
        return local
    try:
        stamp = email.utils.parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return local
    if not math.isfinite(stamp) or abs(stamp + 0.5 - local) <= SKEW_SECONDS:
        return local
    return stamp + 0.5  # the middle of the second it names


def _whole(value: str | None, low: int, high: int) -> int | None:
    if value is None:
        return None
    value = value.strip()
    if not (value.isascii() and value.isdigit()) or len(value) > 12:
        return None
    number = int(value)
    return number if low <= number <= high else None


@dataclass(frozen=True)
class Pause:
    """A pause of every request of one token, as a header asked for it and as it is held.

    :param header: the header that asked for it: ``Retry-After`` (a 429), ``X-RateLimit-Reset`` (a used-up
        window), or ``no Retry-After`` (a 429 without one: the retry policy's backoff).
    :param asked: the seconds the header asked for.
    :param asked_until: epoch seconds when the pause asked for ends.
    :param until: :func:`time.monotonic` seconds when the pause held ends: ``asked``, at most ``cap``.
    :param cap: the longest pause held (the retry policy's ``max_retry_after``).
    """

    header: str
    asked: float
    asked_until: float
    until: float
    cap: float

    def describe(self) -> str:
        """The header, how long it asked to wait and until when (UTC), and the cap when it cut the pause."""
        until = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(min(self.asked_until, 253402300799)))
        cut = f", held for at most max_retry_after={self.cap:g} s" if self.asked > self.cap else ""
        return f"the platform's {self.header} asked this token to wait {self.asked:.0f} s (until {until}){cut}"

    def warning(self, name: str, now: float, waiting: int) -> tuple[Any, ...]:
        """The arguments of the pause's one WARNING line: the account, the wait, the header, the requests waiting.

        :param name: the account, as the limiter names it.
        :param now: monotonic seconds when the pause started.
        :param waiting: the requests of the account waiting for their turn then.
        """
        return (
            "Rate limited by the Analytics Platform at %s: every request of this token in this process waits %.0f s "
            "(%s); %d requests waiting",
            name,
            self.until - now,
            self.describe(),
            waiting,
        )

    def refusal(
        self, method: str, path: str, now: float, call_deadline: float | None, config: ClientConfig
    ) -> RateLimitedError | None:
        """The error of a request this pause would hold past its deadline or past ``cap``, or at all where the call
        waits for no pause (``_deadline.waiting_for_no_pause``); ``None``: it may wait.

        A client of the same token with a longer ``max_retry_after`` can set a pause longer than this client's cap.

        :param method: the request's method.
        :param path: its path.
        :param now: monotonic seconds.
        :param call_deadline: the call's deadline (monotonic), if any.
        :param config: the client's settings: its cap (``retry.max_retry_after``) and connection, for the error.
        """
        cap = config.retry.max_retry_after
        if call_deadline is not None and self.until >= call_deadline:
            why = f"its turn would come after this call's deadline ({max(0.0, call_deadline - now):.1f} s from now)"
        elif not pause_waits_allowed():
            why = "this call waits for no pause (its task gives its worker slot back until the pause ends)"
        elif self.until - now > cap:
            why = f"this client waits at most max_retry_after={cap:g} s"
        else:
            return None
        return RateLimitedError(
            f"not sent: {self.describe()}, and {why}",
            status=429,
            error_type="rate_limited",
            method=method,
            path=path,
            connection_id=config.connection_id,
            retry_after=self.asked,
        )
