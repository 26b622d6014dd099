"""One poll of the platform, made the same way by every trigger: the waits in ``base.py`` and the watchers.

A poll is bounded by a deadline (``call_deadline``, retries included); an outage the client's own retries
did not outlast is logged and left for the next poll; a refused token makes the hook read its connection
once more (a rotated token: ``AnalyticsAsyncHook.rereading``), and only a second refusal, or any other API error,
is the caller's to handle. A watcher that goes on polling after such a refusal reads its connection again at
most every ``RELOAD_AGAIN_SECONDS``: the new token may reach the secrets backend only after the old one was
refused.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from airflow_provider_analytics.hooks._reread import TokenRefusals
from airflow_provider_analytics.hooks.async_analytics import AnalyticsAsyncHook
from airflow_provider_analytics.wire._deadline import LAST_LOOK_SECONDS, call_deadline
from airflow_provider_analytics.wire.errors import TRANSIENT_ERRORS

Fetched = TypeVar("Fetched")
# After a re-read connection whose token was refused too, the next re-read waits this long: a watcher polls for
# ever, and a refused token must neither stop it for good nor make every poll read the connection twice over.
RELOAD_AGAIN_SECONDS = 60.0
__all__ = ["LAST_LOOK_SECONDS", "RELOAD_AGAIN_SECONDS", "TRANSIENT_ERRORS", "PlatformPoller"]


class _Log(Protocol):
    # What a poll logs through: a trigger's ``self.log`` (Airflow's logger type differs by release).
    def info(self, msg: Any, /, *args: Any) -> Any: ...
    def warning(self, msg: Any, /, *args: Any) -> Any: ...


class PlatformPoller:
    """Makes the polls of one trigger on one hook, remembering whether the connection was just re-read.

    :param hook: the trigger's async hook (its client lives as long as the trigger runs).
    :param log: the trigger's logger.
    :param what: how log lines name what is polled, e.g. ``execution ex_1 of workflow wf_2``.
    :param reload_again_after: seconds before a connection whose re-read token was refused too is read again.
    """

    def __init__(
        self, hook: AnalyticsAsyncHook, log: _Log, what: str, reload_again_after: float = RELOAD_AGAIN_SECONDS
    ) -> None:
        self.hook = hook
        self.log = log
        self.what = what
        # Kept across polls: a token refused again right after a re-read is final for that poll, and is not a
        # reason to re-read at every later one.
        self.refusals = TokenRefusals(log, again_after=reload_again_after)

    async def poll(
        self,
        fetch: Callable[[AnalyticsAsyncHook], Awaitable[Fetched]],
        deadline: float | None = None,
        *,
        budget: float | None = None,
    ) -> Fetched | None:
        """Fetch once; ``None`` when a transient error (logged as a warning) leaves it to the next poll.

        :param fetch: the request, given the hook.
        :param deadline: epoch seconds by which the poll ends (at least ``LAST_LOOK_SECONDS`` from now);
            ``None`` leaves it to the client's own timeouts and retries.
        :param budget: instead of a deadline, seconds the poll may spend on the platform; the wait for the
            connection's turn under a rate limit comes on top (a poll that gave up in the queue would only
            join its end again, and starve).
        :raises AnalyticsError: a permanent error (404, 403, a malformed answer, ...), or a 401 that a
            re-read connection did not cure.
        """
        if budget is not None:
            queued = (await self.hook.get_client()).expected_wait(time.monotonic())
            deadline = time.time() + budget + queued
        remaining = None if deadline is None else deadline - time.time()
        try:
            with call_deadline(None if remaining is None else max(remaining, LAST_LOOK_SECONDS)):
                return await self.hook.rereading(fetch, self.refusals)
        except TRANSIENT_ERRORS as exc:
            self.log.warning("Polling %s failed, will poll again: %s", self.what, exc)
            return None
