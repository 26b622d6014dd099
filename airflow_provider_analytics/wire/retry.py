"""The retry policy: pure decisions, no I/O, so both transports share it and tests can read it."""

from __future__ import annotations

import datetime
import email.utils
import re
import time
from dataclasses import dataclass

__all__ = ["RetryPolicy"]

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRIES_LIMIT = 20
_DELTA_SECONDS = re.compile(r"[0-9]+")
# Delta-seconds with more digits than this (over 317 years) are read as VERY_LONG_RETRY_AFTER without being
# converted: a 10,000-digit value costs no big-integer arithmetic, and still counts as the longest of waits.
_MAX_DELTA_DIGITS = 10
VERY_LONG_RETRY_AFTER = float(10**_MAX_DELTA_DIGITS)


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before sending a request again.

    :param max_retries: retries after the first attempt (0 disables retrying).
    :param backoff_initial: the first backoff, in seconds; it doubles with each retry.
    :param backoff_max: the cap of a single backoff, in seconds.
    :param max_retry_after: the longest ``Retry-After`` the client will sleep through; a longer one ends
        the retries at once with :class:`~airflow_provider_analytics.wire.errors.RateLimitedError`, so a
        task never sleeps for an hour inside one HTTP call. It is also the longest pause any header
        (``X-RateLimit-Reset`` included) holds the token's other requests for (``_throttle.py``).
    :param jitter: the fraction of each backoff that is randomised, so clients do not retry in lockstep.
    :param max_rate_limited_seconds: how long one request keeps being refused with 429 before it fails with
        :class:`~airflow_provider_analytics.wire.errors.RateLimitedError`. A 429 does not use up
        ``max_retries``: the request waits its turn behind the connection's rate limiter (``_throttle.py``), so
        throttling alone does not fail work; a call deadline in force (a task's ``timeout``) ends it sooner.
    """

    max_retries: int = 4
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    max_retry_after: float = 120.0
    jitter: float = 0.25
    max_rate_limited_seconds: float = 900.0

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int):
            raise ValueError(f"max_retries must be a whole number, got {self.max_retries!r}")
        if not 0 <= self.max_retries <= MAX_RETRIES_LIMIT:
            raise ValueError(f"max_retries must be from 0 to {MAX_RETRIES_LIMIT}, got {self.max_retries}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be between 0 and 1, got {self.jitter}")
        if not self.max_rate_limited_seconds > 0:
            raise ValueError(f"max_rate_limited_seconds must be over 0, got {self.max_rate_limited_seconds}")

    def retry_reason(
        self, *, retries_done: int, idempotent: bool, status: int | None = None, transport_error: bool = False
    ) -> str | None:
        """Say why the request should be sent again, or ``None`` when it should not.

        A 429 means the platform did not process the request, so it is retried for any method; 5xx answers
        and lost connections are retried only when a repeat cannot do the work twice (GET, PUT, and POST
        with an ``Idempotency-Key``).

        :param retries_done: retries already made for this request.
        :param idempotent: whether sending the request twice is harmless.
        :param status: the HTTP status received, if any.
        :param transport_error: whether no HTTP answer arrived.
        """
        if retries_done >= self.max_retries:
            return None
        if status == 429:
            return "rate limited (429)"
        if not idempotent:
            return None
        if status is not None and status in RETRYABLE_STATUSES:
            return f"server error ({status})"
        if transport_error:
            return "connection failed"
        return None

    def backoff(self, retries_done: int, random_fraction: float) -> float:
        """The jittered exponential backoff before retry number ``retries_done + 1``.

        :param retries_done: retries already made.
        :param random_fraction: a number in ``[0, 1)``; the caller supplies the randomness.
        """
        # The exponent stops growing long before a float would overflow: a thousand refusals that each said
        # "Retry-After: 0" (they do not use up retries) then one that said nothing must still back off, not raise.
        base = min(self.backoff_max, self.backoff_initial * (2.0 ** min(retries_done, 64)))
        return base * (1 - self.jitter * random_fraction)

    def wait_before_retry(self, retries_done: int, retry_after: float | None, random_fraction: float) -> float | None:
        """Seconds to sleep before the next retry, or ``None`` to stop because ``Retry-After`` is too long.

        :param retries_done: retries already made.
        :param retry_after: the parsed ``Retry-After`` of the answer, if it had one.
        :param random_fraction: a number in ``[0, 1)``.
        """
        if retry_after is not None:
            if retry_after > self.max_retry_after:
                return None
            return max(0.0, retry_after)
        return self.backoff(retries_done, random_fraction)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Parse ``Retry-After`` (delta-seconds or an HTTP-date) into seconds from now.

    Delta-seconds of more than 10 digits (leading zeros aside) are :data:`VERY_LONG_RETRY_AFTER`: longer than
    any policy waits, so they stop the retries as any long wait does.

    :param value: the header's value.
    :param now: the current epoch time (for tests); defaults to the clock.
    """
    if not value:
        return None
    value = value.strip()
    if _DELTA_SECONDS.fullmatch(value):  # str.isdigit() would also take "²" and other non-ASCII digits
        digits = value.lstrip("0")
        return VERY_LONG_RETRY_AFTER if len(digits) > _MAX_DELTA_DIGITS else float(digits or 0)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; a naive one is read as UTC
        when = when.replace(tzinfo=datetime.UTC)
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)
