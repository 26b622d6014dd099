"""When a refused token (401) is worth reading the connection again for: the decision both hooks share.

A wait can outlast its token: a secrets backend may hold a rotated one by the time the platform refuses the old
one. So a read of the work waited on (a task's poll on the worker, a sensor's poke, a trigger's poll) that is
refused reads its connection once more and, when that changed, is sent once more; a refusal right after that
re-read is final. A watcher polls for ever: after a re-read whose token was refused too it reads the connection
again only ``again_after`` seconds later, so a refused token neither stops it for good nor makes every poll read
the connection twice over. Other requests (starts, writes, cancels) are not repeated on a 401.

No I/O here: :meth:`AnalyticsHook.rereading <airflow_provider_analytics.hooks.analytics.AnalyticsHook.rereading>`
and its async twin read the connection and send, as the two clients drive the wire's one retry loop.
"""

from __future__ import annotations

from airflow_provider_analytics.wire._progress import InfoLog

__all__ = ["REREAD_LINE", "TokenRefusals"]

# Logged when a re-read connection changed and the refused request is sent again with it.
REREAD_LINE = "The token was refused; using the connection as it reads now"


class TokenRefusals:
    """One wait's memory of its connection re-reads: whether a refused token is worth a re-read now.

    :param log: the waiting task's or trigger's logger, which says when a re-read connection is used.
    :param again_after: seconds after a re-read before a later refusal reads the connection again (0: every
        refused read may re-read once).
    """

    def __init__(self, log: InfoLog, again_after: float = 0.0) -> None:
        self.log = log
        self.again_after = again_after
        # When the connection was last re-read (monotonic seconds); cleared by the next answer.
        self._reread_at: float | None = None

    def worth_rereading(self, now: float) -> bool:
        """After a 401: read the connection again, unless it was re-read less than ``again_after`` ago.

        :param now: :func:`time.monotonic` seconds.
        """
        return self._reread_at is None or now - self._reread_at >= self.again_after

    def reread(self, now: float) -> None:
        """The re-read connection changed: the refused request goes again with it (its refusal is then final).

        :param now: :func:`time.monotonic` seconds.
        """
        self._reread_at = now
        self.log.info(REREAD_LINE)

    def answered(self) -> None:
        """The platform answered: the token works, and the next refusal may read the connection again."""
        self._reread_at = None
