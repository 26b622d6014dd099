"""Waiting for platform work from a task: one poll-or-defer loop, and one check of resumed events.

Used by every operator and the sensor that wait, so deadlines, deferral and progress logs behave the same.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NoReturn

from airflow.sdk.exceptions import AirflowException

from airflow_provider_analytics.wire.outcomes import EVENT_STATUSES, Outcome

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator

    from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger

# Airflow's own defer timeout is only a backstop for a triggerer that is gone: our trigger fires at the
# deadline itself, this long before Airflow would.
DEFER_BACKSTOP_SECONDS = 300.0


def wait_until_done(
    operator: BaseOperator,
    resource: Mapping[str, Any],
    *,
    fetch: Callable[[], Mapping[str, Any]],
    outcome: Callable[[Mapping[str, Any]], Outcome | None],
    deadline: float | None,
    poll_interval: float,
    describe: str,
    give_up: Callable[[Mapping[str, Any]], NoReturn],
    trigger: Callable[[], AnalyticsPollTrigger] | None = None,
) -> tuple[Mapping[str, Any], Outcome]:
    """Poll until ``outcome`` decides, or defer to ``trigger()`` (resuming in ``execute_complete``).

    :param operator: the waiting task (for ``defer`` and its log).
    :param resource: the state already fetched.
    :param fetch: fetches the current state.
    :param outcome: ``success``/``failure`` when the wait is over, else ``None``.
    :param deadline: epoch seconds after which ``give_up`` is called; ``None`` waits without limit.
    :param poll_interval: seconds between polls on the worker.
    :param describe: how the log names what is waited for.
    :param give_up: raises when the deadline has passed, given the last state seen.
    :param trigger: builds the trigger to defer to; ``None`` polls on the worker.
    """
    while (result := outcome(resource)) is None:
        remaining = None if deadline is None else deadline - time.time()
        if remaining is not None and remaining <= 0:
            give_up(resource)
        if trigger is not None:
            operator.defer(
                trigger=trigger(),
                method_name="execute_complete",
                timeout=None if remaining is None else timedelta(seconds=remaining + DEFER_BACKSTOP_SECONDS),
            )
        operator.log.info("%s is %s; next check in %g s", describe, resource.get("status"), poll_interval)
        time.sleep(poll_interval if remaining is None else max(0.0, min(poll_interval, remaining)))
        resource = fetch()
    return resource, result


def checked_event(event: Any, kind: str, task_id: str) -> Mapping[str, Any]:
    """The trigger event a task resumed with, after checking it is a well-formed event of ``kind``.

    :param event: what the task was resumed with.
    :param kind: the trigger kind the task deferred to (``execution``, ``report``, ``sync``).
    :param task_id: the task, for the message.
    :raises AirflowException: anything else.
    """
    if (
        not isinstance(event, Mapping)
        or event.get("status") not in EVENT_STATUSES
        or event.get("kind") != kind
        or not isinstance(event.get("target"), Mapping)
    ):
        raise AirflowException(f"{task_id}: unexpected trigger event {event!r}")
    return event
