"""A rate-limit pause of the token, as a wait meets it: the decision the worker's wait, the sensors' pokes and the
triggers share (docs/operators.md, "Waiting under the platform's rate limit").

The client holds every request of a token for the pause a header asked for (``Retry-After`` on a 429,
``X-RateLimit-Reset`` on an answer with nothing left in its window), for ``max_retry_after`` at most
(``wire/_throttle.py``), and fails at once a call the pause would hold past its deadline. A wait knows more than
one call does: its own deadline, and whether it holds a worker slot. A pause whose header asks it to last until the
wait's deadline or later leaves no request a chance to be answered in time, so the wait ends as a timeout at once,
naming the header, instead of holding its slot (or the triggerer's polls) until the deadline. The header's own
end counts (``Pause.asked_until``), not the part of it the client holds: a request sent when the client's cap lets
it go would only be refused again.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from airflow_provider_analytics.wire._deadline import LAST_LOOK_SECONDS, current_call_deadline

if TYPE_CHECKING:
    from airflow_provider_analytics.wire._core import BaseAnalyticsClient
    from airflow_provider_analytics.wire._rate_headers import Pause

__all__ = ["ends_past", "past_deadline", "pause_now", "step_deadline"]


def pause_now(client: BaseAnalyticsClient) -> Pause | None:
    """The pause holding the client's token now, with the header that asked for it; or ``None``.

    The pause this process learnt, or the one the fleet's shared limiter holds (a store named by the connection:
    another process may have learnt it), whichever the platform asked to last longer.

    :param client: the wait's client (sync or async).
    """
    now = time.monotonic()
    shared = client.shared_limiter
    pauses = [client.rate_limiter.pause_in_force(now), None if shared is None else shared.pause_in_force(now)]
    return max((pause for pause in pauses if pause is not None), key=lambda pause: pause.asked_until, default=None)


def ends_past(pause: Pause | None, deadline: float | None) -> bool:
    """Whether the pause's header asks the token to wait until ``deadline`` or later.

    :param pause: the pause in force, if any.
    :param deadline: the wait's deadline, epoch seconds (``None``: no limit).
    """
    return pause is not None and deadline is not None and pause.asked_until >= deadline


def past_deadline(pause: Pause, deadline: float) -> str:
    """Why a wait ended before its deadline, for its timeout's message, log line or event: the header, how long it
    asked to wait and until when, and how far off the deadline was.

    :param pause: the pause that ends past the deadline (:func:`ends_past`).
    :param deadline: the wait's deadline, epoch seconds.
    """
    left = max(0.0, deadline - time.time())
    return f"no request could be answered before the wait's deadline, {left:.1f} s from now: {pause.describe()}"


def step_deadline() -> float | None:
    """The task step's deadline in epoch seconds (``None``: no limit): the one every call of the step keeps.

    ``task_step`` bounds a step's calls by the task's deadline plus ``LAST_LOOK_SECONDS`` (a sensor's ``timeout``,
    counted from its first poke in reschedule mode, or just before ``execution_timeout``); this reads it back, so a
    poke judges a pause against the same deadline its requests already keep.
    """
    deadline = current_call_deadline()
    if deadline is None:
        return None
    return time.time() + (deadline - time.monotonic()) - LAST_LOOK_SECONDS
