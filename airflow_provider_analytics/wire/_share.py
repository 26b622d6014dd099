"""A process's share of its token's limit, learnt from ``X-RateLimit-Remaining`` (placeholder: always all of it)."""

from __future__ import annotations

__all__ = ["ShareOfLimit"]


class ShareOfLimit:
    """This limiter's share of the token's limit (1.0: it is alone on the token, or nothing says otherwise)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 1.0

    def observe(self, reset: float, remaining: int, limit: int, window: float | None, left: float) -> None:
        """One successful answer's headers.

        :param reset: its window's ``Reset`` (epoch seconds).
        :param remaining: requests left in that window.
        :param limit: requests allowed in it.
        :param window: the window's length when known.
        :param left: seconds left in the window, by this host's clock.
        """
