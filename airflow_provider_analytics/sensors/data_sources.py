"""Gate a pipeline on a data source having synced after a given time."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import (
    AirflowFailException,
    AirflowSensorTimeout,
    BaseSensorOperator,
    PokeReturnValue,
)

from airflow_provider_analytics import operators  # its _runtime: what a task uses once it runs
from airflow_provider_analytics.hooks import DEFAULT_CONN_ID
from airflow_provider_analytics.operators._common import (
    DEFAULT_DEFERRABLE,
    HookOwner,
    check_poke_durations,
    poll_seconds,
    task_step,
)
from airflow_provider_analytics.operators.waiting import (
    DEFER_BACKSTOP_SECONDS,
    NOTHING_SEEN,
    log_poll,
    read_event,
    started_over,
)

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context


__all__ = ["DataSourceSyncedSensor"]


class DataSourceSyncedSensor(HookOwner, BaseSensorOperator):
    """Succeed once the data source's data is fresh: ``last_synced_at >= synced_after``.

    Freshness, not status, decides: a source may read ``syncing`` while its last completed sync already
    covers the run. A sync that *failed* after ``synced_after`` fails the task at once (or skips it with
    ``soft_fail``) when ``fail_on_sync_failure`` is set. Works in poke, reschedule and deferrable modes;
    returns the sync status.

    :param data_source_id: the data source (templated); give it or ``data_source_name``.
    :param data_source_name: the data source's name instead of its id (templated): looked up once per try (one
        listing of data sources, logged with the id it resolved to); a name that no data source or several have
        fails the task.
    :param synced_after: an aware datetime or ISO 8601 string with an offset (templated); default: the
        run's data interval end, else its logical date, else its start.
    :param fail_on_sync_failure: fail on a sync that failed after ``synced_after``.
    :param deferrable: wait in the triggerer (default: ``[operators] default_deferrable``).
    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    template_fields = ("data_source_id", "data_source_name", "synced_after")
    ui_color = "#e6f4ea"

    def __init__(
        self,
        *,
        data_source_id: str | None = None,
        data_source_name: str | None = None,
        synced_after: datetime | str | None = None,
        fail_on_sync_failure: bool = True,
        deferrable: bool = DEFAULT_DEFERRABLE,
        analytics_conn_id: str = DEFAULT_CONN_ID,
        **kwargs: Any,
    ) -> None:
        if (data_source_id is None) == (data_source_name is None):
            operators._runtime.one_of(data_source_id, data_source_name, "data_source_id", "data_source_name")
        check_poke_durations(kwargs)
        super().__init__(**kwargs)
        self.data_source_id = data_source_id
        self.data_source_name = data_source_name
        # Whether this try looked the name up already (the id is then in data_source_id): once per try.
        self._name_resolved = False
        self.synced_after = synced_after
        self.fail_on_sync_failure = fail_on_sync_failure
        self.deferrable = deferrable
        self.analytics_conn_id = analytics_conn_id
        # The status the last poke in this process saw (log_poll): in reschedule mode each poke starts afresh.
        self._last_status: object = NOTHING_SEEN

    def threshold(self, context: Context) -> datetime:
        """The time the data must be fresh from (see ``synced_after``)."""

        value: Any = self.synced_after
        if value is None or value == "":
            dag_run = context.get("dag_run")
            value = (
                context.get("data_interval_end")
                or context.get("logical_date")
                or getattr(dag_run, "run_after", None)
                or getattr(dag_run, "start_date", None)
            )
        parsed = operators._runtime.parse_time(value) if isinstance(value, str) else value
        if not isinstance(parsed, datetime) or parsed.tzinfo is None:
            raise operators._runtime.AnalyticsInputError(
                f"synced_after must be a timezone-aware datetime or an ISO 8601 string with an offset "
                f"(e.g. 2026-11-21T10:00:00Z), got {value!r}"
            )
        return parsed

    def waiting_on(self, threshold: datetime) -> operators._runtime.SyncJob:
        """The wait for data fresh from ``threshold``: the one its trigger runs from too.

        :param threshold: from :meth:`threshold`.
        """
        if self.data_source_id is None:  # execute and poke look the name up before they get here
            raise RuntimeError(f"{self.task_id}: data_source_name {self.data_source_name!r} was not looked up")
        return operators._runtime.SyncJob(self.data_source_id, threshold.isoformat(), self.fail_on_sync_failure)

    def resolve_name(self) -> None:
        """Look ``data_source_name`` up, once per try in this process (one listing), and set ``data_source_id``.

        In reschedule mode each poke runs in a new process, from an operator rebuilt without the id: each of
        those pokes looks the name up again (one listing per poke), which is the price of a name there.
        """
        if self.data_source_name is None or self._name_resolved:
            return

        self.data_source_id = operators._runtime.resolve_name(
            "data source", self.hook.list_data_sources(), self.data_source_name
        )
        self._name_resolved = True
        self.log.info("Resolved data_source_name=%r to data_source_id=%r", self.data_source_name, self.data_source_id)

    def poke(self, context: Context) -> PokeReturnValue | bool:
        return operators._runtime.poke_under_pauses(self, lambda: self._poke(context), self._timed_out)

    def _poke(self, context: Context) -> PokeReturnValue | bool:
        self.resolve_name()
        threshold = self.threshold(context)
        wait = self.waiting_on(threshold)
        # The operators' read: a token rotated while the sensor waits is picked up from the connection.
        status = self.read(wait.fetch())
        outcome = wait.outcome(status)
        if outcome is not None:  # a poke that sees the end times the work, as a trigger or a worker's wait does
            operators._runtime.work_ended(wait.kind, outcome, wait.took(status))
        if outcome == "failure":
            raise AirflowFailException(self._failure(status, threshold))
        if outcome == "success":
            self.log.info("data source %s synced at %s (needed %s)", self.data_source_id,
                          status.get("last_synced_at"), threshold.isoformat())  # fmt: skip
            return PokeReturnValue(is_done=True, xcom_value=dict(status))
        self._last_status = log_poll(self.log, wait, status, self._last_status, float(self.poke_interval))
        return False

    @task_step
    def execute(self, context: Context) -> Any:
        self._name_resolved = False  # a new try (or a try started over) looks the name up again
        if self.data_source_name is None:  # a name is looked up in the first poke, from a listing checked there
            operators._runtime.validate_id(self.data_source_id, "data_source_id")
        poll_seconds(self.poke_interval, "poke_interval")
        threshold = self.threshold(context)
        if not self.deferrable:
            return operators._runtime.reschedule_after_pause(self, functools.partial(super().execute, context))
        # The trigger needs the id: a deferrable sensor given a name looks it up first, waiting for a pause of the
        # token as an operator's start does (docs/operators.md, "Waiting under the platform's rate limit").
        self.resolve_name()

        return operators._runtime.poke_then_defer(
            self, context, self.waiting_on(threshold), operators._runtime.DataSourceSyncTrigger, DEFER_BACKSTOP_SECONDS
        )

    @task_step
    def execute_complete(self, context: Context, event: Any = None, deferral: Mapping[str, Any] | None = None) -> Any:
        """Resume from the trigger: check the event is ours, then succeed, fail or time out.

        :param context: the task's context.
        :param event: the trigger's event.
        :param deferral: what :meth:`execute` handed over when it deferred (``at``: epoch seconds).
        """
        if started_over(self.log, event, context):
            return self.execute(context)
        expected = {"data_source_id": self.data_source_id}

        wait, checked = read_event(self.log, operators._runtime.SyncJob, self.task_id, event, expected, deferral)
        if self.data_source_id is None:  # given by name: the event names the id; it is not looked up again
            self.data_source_id = checked["target"].get("data_source_id")
        threshold = self.threshold(context)
        status = checked["resource"] or {}
        if checked["status"] == "success":
            return status
        if checked["status"] == "failure":
            raise AirflowFailException(self._failure(status, threshold))
        if checked["status"] == "timeout":
            last = f"; at the last check {wait.state_of(status)}" if status else ""
            raise AirflowSensorTimeout(
                f"data source {self.data_source_id} did not sync in time: no sync after {threshold.isoformat()} "
                f"within timeout={float(self.timeout):g} s{last}. To wait longer, raise `timeout`"
            )

        raise operators._runtime.RemoteWaitError.from_event(checked["message"], checked.get("api_error"))

    def _timed_out(self, why: str) -> AirflowSensorTimeout:
        """The timeout for a rate-limit pause past the deadline (``poke_under_pauses``)."""
        source = self.data_source_id or repr(self.data_source_name)
        return AirflowSensorTimeout(
            f"data source {source} did not sync in time: gave up before timeout={float(self.timeout):g} s ran out: "
            f"{why}. To wait longer, raise `timeout`"
        )

    def _failure(self, status: Any, threshold: datetime) -> str:
        error = status.get("error") or {}
        message = (
            f"data source {self.data_source_id}: the sync attempted at {status.get('last_attempt_at')} "
            f"(after {threshold.isoformat()}) failed: {error.get('type', 'unknown_error')}: "
            f"{error.get('message', 'the platform gave no message')}"
        )
        # With soft_fail Airflow replaces this exception with a generic skip: log why first.
        self.log.error("%s", message)
        return message
