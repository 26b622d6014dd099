"""The ``X-RateLimit-*`` headers of an answer, checked before the rate limiter (``_throttle.py``) believes them.

The contract (section 3) says an answer may carry the requests allowed in the current window, those left in it,
and the epoch second it resets; a platform may send none, and a broken or hostile one may send anything. Values
that are not plain whole numbers in range are ignored, so they can neither pause the client nor make it spin.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

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


def _whole(value: str | None, low: int, high: int) -> int | None:
    if value is None:
        return None
    value = value.strip()
    if not (value.isascii() and value.isdigit()) or len(value) > 12:
        return None
    number = int(value)
    return number if low <= number <= high else None
