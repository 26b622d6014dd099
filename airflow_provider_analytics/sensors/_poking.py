"""What the sensors do when they run, reached through the runtime seam (``operators/_runtime.py``): never at DAG
parse time. The deferrable sensors' first poke (:func:`poke_then_defer`), and how every poke meets a rate-limit pause
of the token (:func:`poke_under_pauses`, :func:`reschedule_after_pause`; docs/operators.md, "Waiting under the
platform's rate limit")."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from airflow.providers.common.compat.sdk import (
    AirflowFailException,
    AirflowSensorTimeout,
    AirflowSkipException,
    PokeReturnValue,
)

from airflow_provider_analytics._jobs.events import try_number_of
from airflow_provider_analytics._jobs.pauses import ends_past, past_deadline, pause_now, step_deadline
from airflow_provider_analytics.version_compat import reschedule_exception
from airflow_provider_analytics.wire._deadline import waiting_for_no_pause
from airflow_provider_analytics.wire.errors import RateLimitedError

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

    from airflow_provider_analytics._jobs.base import RemoteJob

Poked = TypeVar("Poked")


def poke_under_pauses(
    sensor: Any, poke: Callable[[], Poked], timed_out: Callable[[str], AirflowSensorTimeout]
) -> Poked | bool:
    """One poke, as the sensor's mode lets a rate-limit pause of its token go.

    - A pause whose header asks the token to wait until the sensor's deadline or later ends the sensor at once as
      a timeout (``timed_out(why)``, logged, raised inside the poke so that ``soft_fail`` skips it): no poke could
      be answered in time. Checked before the poke, and after one that was refused or found the work not done.
    - A sensor that gives its worker slot back, in reschedule mode or deferrable before it defers, waits for no
      pause: its requests are refused unsent, and the poke says "not yet"; :func:`reschedule_after_pause`
      reschedules it for the pause's end, :func:`poke_then_defer` defers it.
    - In poke mode the slot is held anyway: a poke waits through a pause inside its request, as every call does
      (for ``max_retry_after`` at most); after a longer one the poke says "not yet" and the sensor pokes again.

    :param sensor: the sensor (its ``hook``, ``mode``, ``deferrable`` and ``log``).
    :param poke: the poke's requests and verdict.
    :param timed_out: the sensor's timeout for a pause past its deadline, given why (the header, its wait).
    """
    client = sensor.hook.client
    frees_slot = bool(sensor.deferrable) or sensor.mode == "reschedule"
    deadline = step_deadline()
    pause = pause_now(client)
    if pause is None or not (frees_slot or ends_past(pause, deadline)):
        try:
            with waiting_for_no_pause() if frees_slot else contextlib.nullcontext():
                poked = poke()
        except RateLimitedError:
            pause = pause_now(client)
            if pause is None:
                raise
        else:
            pause = pause_now(client)  # the answer may have used up the window: a pause from now on
            if poked or not ends_past(pause, deadline):
                return poked
    if pause is not None and deadline is not None and ends_past(pause, deadline):
        error = timed_out(past_deadline(pause, deadline))
        sensor.log.warning("%s", error)  # with soft_fail Airflow replaces it with a generic skip
        raise error
    if pause is not None and sensor.deferrable:
        sensor.log.info("%s: deferring now; the triggerer waits for it, not the worker", pause.describe())
    elif pause is not None and not frees_slot:
        sensor.log.info(
            "%s: poking again after it (mode='poke' holds the worker slot meanwhile, mode='reschedule' frees it)",
            pause.describe(),
        )
    return False  # in reschedule mode, reschedule_after_pause says when the sensor comes back


def reschedule_after_pause(sensor: Any, execute: Callable[[], Any]) -> Any:
    """``BaseSensorOperator.execute`` in reschedule mode, rescheduled no sooner than a pause of its token ends.

    Airflow reschedules a poke that said "not yet" ``poke_interval`` from now; a pause of the token in force (one the
    poke met, or one its answer asked for: a window used up until ``X-RateLimit-Reset``) moves that to the end the
    pause's header asked for, when that is later: a poke any sooner would only be refused.

    :param sensor: the sensor (its ``hook``).
    :param execute: ``BaseSensorOperator.execute`` bound to the sensor and its context.
    """
    try:
        return execute()
    except reschedule_exception() as rescheduled:
        pause = pause_now(sensor.hook.client)
        ends = None if pause is None else datetime.fromtimestamp(pause.asked_until, UTC)
        if pause is not None and ends is not None and ends > rescheduled.reschedule_date:  # type: ignore[attr-defined]
            rescheduled.reschedule_date = ends  # type: ignore[attr-defined]
            sensor.log.info(
                "%s: rescheduled for %s; the worker slot is free until then", pause.describe(), ends.isoformat()
            )
        raise


def poke_then_defer(
    sensor: Any, context: Context, work: RemoteJob, trigger: type[Any], backstop: float, **arguments: Any
) -> Any:
    """A deferrable sensor's ``execute``: one poke on the worker, then the work's trigger if the wait goes on.

    Most waits a sensor gates on are over at once, and a deferral costs a round through the triggerer and the
    scheduler. The first poke runs outside ``BaseSensorOperator.execute``, which is where ``soft_fail`` applies:
    it is applied here too (to a failure, and to a timeout for a rate-limit pause past the deadline). A poke that
    met a pause defers at once (:func:`poke_under_pauses`). The deferral's timeout is only a backstop for a
    triggerer that is gone.

    :param sensor: the sensor (its ``poke``, ``poke_interval``, ``timeout`` and connection id).
    :param context: the task's context.
    :param work: the work waited on (its target names it to the trigger).
    :param trigger: the trigger class for that kind of work.
    :param backstop: seconds past the sensor's timeout that Airflow's own defer timeout waits (the operators'
        ``DEFER_BACKSTOP_SECONDS``: passed in, since this module sits below them).
    :param arguments: the trigger's other arguments.
    :returns: the first poke's value when it ended the wait (else the task defers).
    """
    try:
        first = sensor.poke(context)
    except (AirflowFailException, AirflowSensorTimeout) as failure:
        if sensor.soft_fail or getattr(sensor, "never_fail", False):
            raise AirflowSkipException(f"Skipping (soft_fail): {failure}") from failure
        raise
    if isinstance(first, PokeReturnValue):
        return first.xcom_value
    deferral: dict[str, Any] = {"at": time.time()}  # when it deferred, for the resume's log line
    links = getattr(sensor, "pushed_links", None)
    if links is not None:  # the links this try pushed, so that get_link answers without a read
        deferral["links"] = dict(links)
    sensor.defer(
        trigger=trigger(
            **work.target,
            poll_interval=float(sensor.poke_interval),
            deadline=time.time() + float(sensor.timeout),
            analytics_conn_id=sensor.analytics_conn_id,
            try_number=try_number_of(context),
            **arguments,
        ),
        method_name="execute_complete",
        timeout=timedelta(seconds=float(sensor.timeout) + backstop),
        kwargs={"deferral": deferral},
    )
