"""What the deferrable sensors do when they run, reached through the runtime seam (``operators/_runtime.py``):
never at DAG parse time."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import AirflowFailException, AirflowSkipException, PokeReturnValue

from airflow_provider_analytics._jobs.events import try_number_of

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

    from airflow_provider_analytics._jobs.base import RemoteJob


def poke_then_defer(
    sensor: Any, context: Context, work: RemoteJob, trigger: type[Any], backstop: float, **arguments: Any
) -> Any:
    """A deferrable sensor's ``execute``: one poke on the worker, then the work's trigger if the wait goes on.

    Most waits a sensor gates on are over at once, and a deferral costs a round through the triggerer and the
    scheduler. The first poke runs outside ``BaseSensorOperator.execute``, which is where ``soft_fail`` applies:
    it is applied here too. The deferral's timeout is only a backstop for a triggerer that is gone.

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
    except AirflowFailException as failure:
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
