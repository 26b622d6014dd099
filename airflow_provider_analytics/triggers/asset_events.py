"""Event-driven scheduling: an asset event for every new successful sync of a data source.

Put :class:`DataSourceSyncedEventTrigger` in an ``AssetWatcher`` and a DAG scheduled on that asset runs
when the data source finishes a sync, with no sensor and no task slot. ``docs/events.md`` explains the
decisions: the watermark, failed syncs, permanent errors, shared polls and the asset state store.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Hashable, Mapping
from datetime import UTC, datetime
from typing import Any

from airflow_provider_analytics.version_compat import asset_state_accessors, require_airflow_3

# Asset watchers exist from Airflow 3.0: on 2.x this import fails with a sentence, not a missing name.
require_airflow_3("DataSourceSyncedEventTrigger (event-driven scheduling with an AssetWatcher)")
# ruff: noqa: E402
from airflow.providers.common.compat.triggers import BaseEventTrigger
from airflow.sdk.exceptions import AirflowRuntimeError
from airflow.triggers.base import TriggerEvent

from airflow_provider_analytics._jobs.base import check_answer_ids
from airflow_provider_analytics.hooks.async_analytics import AnalyticsAsyncHook
from airflow_provider_analytics.hooks.base import DEFAULT_CONN_ID
from airflow_provider_analytics.triggers._polling import PlatformPoller
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._contract import ID_PATTERN, MIN_POLL_INTERVAL, SyncStatus
from airflow_provider_analytics.wire._times import parse_time
from airflow_provider_analytics.wire.errors import AnalyticsError, AnalyticsInputError

DEFAULT_POLL_INTERVAL = 60.0
# A poll may take its whole interval, but never less than this: a short interval must not turn a slow
# platform into a stream of timed-out polls.
POLL_BUDGET_FLOOR = 10.0
# Shared-stream keys start with this, so they never equal another trigger class's keys.
STREAM_KIND = "airflow_provider_analytics.data_source_sync"
# What Airflow's asset state store raises when it cannot answer: an error response from the API server
# (AirflowRuntimeError), a broken supervisor channel (OSError, EOFError), or an ambiguous store
# (ValueError). The watcher logs it and tries again at the next poll; anything else is a bug to see.
STORE_ERRORS = (AirflowRuntimeError, OSError, EOFError, ValueError)
__all__ = ["DataSourceSyncedEventTrigger"]


def watermark_key(analytics_conn_id: str, data_source_id: str) -> str:
    """The asset state store key of the last sync reported for one data source on one connection.

    Keyed by both, so one asset watched for several sources (or platforms) keeps one watermark for each.

    :param analytics_conn_id: the Airflow connection.
    :param data_source_id: the data source.
    """
    return f"analytics_last_reported_sync/{analytics_conn_id}/{data_source_id}"


class DataSourceSyncedEventTrigger(BaseEventTrigger):
    """Fires once for each new successful sync of a data source: a ``last_synced_at`` later than the last one
    it reported. The event's payload is the sync status, which lands in the asset event's ``extra["payload"]``.

    The first poll of a new watcher only records the current ``last_synced_at``: a sync that finished before
    the watcher existed is not an event. The watermark is kept in the asset state store (Airflow 3.3+) and
    written before the event leaves the trigger, so a triggerer restart neither repeats a sync nor misses one
    that finished while it was down. A failed sync is not an event (it is logged once); a permanent API error
    (a deleted data source, a refused token) is logged once and polling goes on, as the watcher must not end.

    A watcher given ``data_source_name`` instead of ``data_source_id`` keeps the name in its stored form and looks
    it up when it starts polling (one listing of data sources, logged with the id it resolved to). A name that no
    data source or several have is a permanent error: logged at ERROR (again only when the problem changes) and
    looked up again at every ``poll_interval`` until it names exactly one.

    :param data_source_id: the data source to watch; give it or ``data_source_name``.
    :param data_source_name: the data source's name instead of its id.
    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    :param poll_interval: seconds between polls (at least ``MIN_POLL_INTERVAL``; less is raised to it).
    """

    def __init__(
        self,
        *,
        data_source_id: str | None = None,
        data_source_name: str | None = None,
        analytics_conn_id: str = DEFAULT_CONN_ID,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # Airflow leaves it unannotated
        # Checked here, at DAG parse time: a watcher with bad arguments would otherwise fail in the triggerer.
        if data_source_id is not None and data_source_name is not None:
            from airflow_provider_analytics.wire._names import one_of

            one_of(data_source_id, data_source_name, "data_source_id", "data_source_name")
        if data_source_name is None and (not isinstance(data_source_id, str) or not ID_PATTERN.match(data_source_id)):
            raise AnalyticsInputError(
                f"data_source_id must be a platform id (letters, digits, '_' or '-', 1-64), got {data_source_id!r}"
                + ("; or give data_source_name" if data_source_id is None else "")
            )
        if data_source_id is None and (not isinstance(data_source_name, str) or not data_source_name):
            raise AnalyticsInputError(f"data_source_name must be a non-empty string, got {data_source_name!r}")
        if not isinstance(analytics_conn_id, str) or not analytics_conn_id:
            raise AnalyticsInputError(f"analytics_conn_id must be a connection id, got {analytics_conn_id!r}")
        if isinstance(poll_interval, bool) or not isinstance(poll_interval, (int, float)):
            raise AnalyticsInputError(f"poll_interval must be a number of seconds, got {poll_interval!r}")
        # Given by name, None until the name is looked up (poll_statuses), or taken from a status (event_for).
        self.data_source_id = data_source_id
        self.data_source_name = data_source_name
        self.analytics_conn_id = analytics_conn_id
        self.poll_interval = max(float(poll_interval), MIN_POLL_INTERVAL)
        # The last last_synced_at reported (or recorded at the first poll), as the platform wrote it; read
        # from the asset state store on the first poll. _UNREAD until then, None for "never synced".
        self._watermark: str | object | None = _UNREAD
        self._failure_logged: object = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """Class path and kwargs: JSON values in a fixed order, so every parse of a DAG file gives the same
        trigger hash and Airflow keeps the running watcher instead of replacing it."""
        # The name, never the id it resolves to: the stored form stays what the DAG file says. A watcher given
        # an id stores exactly the kwargs it always did, so its hash (and the running watcher) stays.
        which = {"data_source_id": self.data_source_id} if self.data_source_name is None else {}
        kwargs = {
            **(which or {"data_source_name": self.data_source_name}),
            "analytics_conn_id": self.analytics_conn_id,
            "poll_interval": self.poll_interval,
        }
        return f"{type(self).__module__}.{type(self).__qualname__}", kwargs

    # --- one poll loop per data source, shared by its watchers (Airflow 3.3+) ----------------------------

    def shared_stream_key(self) -> Hashable | None:
        """Watchers of the same data source on the same connection and interval share one poll.

        The interval is part of the key so that a watcher asking for 10 s is never slowed to another's 300 s.
        """
        source = self.data_source_id if self.data_source_name is None else ("name", self.data_source_name)
        return (STREAM_KIND, self.analytics_conn_id, source, self.poll_interval)

    @classmethod
    async def open_shared_stream(cls, kwargs: dict[str, Any]) -> AsyncIterator[Any]:
        """The shared poll: every sync status read, forever (see :meth:`filter_shared_stream`).

        :param kwargs: one watcher's kwargs; only the fields of :meth:`shared_stream_key` are used.
        """
        async for status in cls(**kwargs).poll_statuses():
            yield status

    async def filter_shared_stream(self, shared_stream: AsyncIterator[Any]) -> AsyncIterator[TriggerEvent]:
        """This watcher's events from the shared poll's sync statuses.

        :param shared_stream: the sync statuses as the shared poll read them.
        """
        async for status in shared_stream:
            event = await self.event_for(status)
            if event is not None:
                yield event

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Poll on its own (Airflow before 3.3, which has no shared streams) and fire for each new sync."""
        async for status in self.poll_statuses():
            event = await self.event_for(status)
            if event is not None:
                yield event

    # --- polling ---------------------------------------------------------------------------------------

    async def poll_statuses(self) -> AsyncIterator[dict[str, Any]]:
        """Read the sync status every ``poll_interval``, forever; statuses only, errors are logged here.

        A transient error waits for the next poll; a permanent one (404, 403, a 401 a re-read connection did
        not cure, a malformed answer) is logged once at ERROR, and again only when it changes.
        """
        async with AnalyticsAsyncHook(self.analytics_conn_id) as hook:
            if self.data_source_id is None:
                await self._resolve_name(hook)
            poller = PlatformPoller(hook, self.log, f"the sync status of {self.data_source_id}")
            failing: tuple[object, ...] | None = None
            while True:
                try:
                    status = await poller.poll(self._fetch, budget=max(self.poll_interval, POLL_BUDGET_FLOOR))
                except AnalyticsError as exc:
                    # Messages carry the request id, new on every poll; the kind of failure is what is news.
                    problem = (type(exc), getattr(exc, "status", None), getattr(exc, "error_type", None))
                    if problem != failing:
                        failing = problem
                        self.log.error("Watching %s: %s; will keep polling", self.data_source_id, exc)
                    status = None
                if status is not None:
                    if failing is not None:
                        failing = None
                        self.log.info("Watching %s: the platform answers again", self.data_source_id)
                    yield dict(status)
                await asyncio.sleep(self.poll_interval)

    @property
    def _source(self) -> str:
        """The id watched; before a name is looked up (never so once polling), the name, marked as one."""
        return self.data_source_id if self.data_source_id is not None else f"name:{self.data_source_name}"

    async def _resolve_name(self, hook: AnalyticsAsyncHook) -> None:
        """Look ``data_source_name`` up (one listing) and set ``data_source_id``; until a listing names exactly one
        data source, the problem is logged as a permanent error is (once, again when it changes) and the lookup
        is tried again every ``poll_interval``."""
        from airflow_provider_analytics.wire._names import resolve_name

        poller = PlatformPoller(hook, self.log, "the list of data sources")
        failing: object = None
        while True:
            try:
                listed = await poller.poll(self._list, budget=max(self.poll_interval, POLL_BUDGET_FLOOR))
                if listed is not None:
                    self.data_source_id = resolve_name("data source", listed, self.data_source_name)
                    self.log.info("Resolved data source name %r to %s", self.data_source_name, self.data_source_id)
                    return
            except AnalyticsError as exc:
                # An input error's message is the news (what was found); an API error's kind is (its request id
                # is new on every attempt).
                problem = (
                    str(exc) if isinstance(exc, AnalyticsInputError) else (type(exc), getattr(exc, "status", None))
                )
                if problem != failing:
                    failing = problem
                    self.log.error("Watching data source %r: %s; will keep looking", self.data_source_name, exc)
            await asyncio.sleep(self.poll_interval)

    @staticmethod
    async def _list(hook: AnalyticsAsyncHook) -> list[Any]:
        sources = await hook.call(endpoints.list_data_sources())
        return list(sources)

    async def _fetch(self, hook: AnalyticsAsyncHook) -> Mapping[str, Any]:
        status = await hook.call(endpoints.get_sync_status(self._source))
        # An answer about another data source is never reported as this one's sync (logged as a permanent error).
        check_answer_ids(status, {"data_source_id": self._source}, f"data source {self._source}", "its sync status")
        return status

    # --- the watermark ---------------------------------------------------------------------------------

    async def event_for(self, status: Mapping[str, Any]) -> TriggerEvent | None:
        """The event for one sync status read, if it shows a sync newer than the watermark.

        The new watermark is stored before the event is returned: between that write and the event reaching
        the triggerer's queue there is no ``await``, so a restart (a cancellation) cannot come between them.

        :param status: the sync status as the platform answered it.
        """
        if self.data_source_id is None:  # given by name, sharing a poll that looked the name up (Airflow 3.3)
            self.data_source_id = status.get("data_source_id")
        self._log_failure_once(status)
        if self._watermark is _UNREAD:
            stored = await self._read_watermark()
            if stored is _UNREAD:
                return None  # the state store did not answer: judge nothing before knowing what was reported
            if stored is _NOTHING_STORED:
                # A new watcher: what happened before it existed is history, not an event.
                await self._write_watermark(status.get("last_synced_at"))
                self.log.info("Watching %s from its sync of %s on", self.data_source_id, status.get("last_synced_at"))
                return None
            self._watermark = stored
        synced = parse_time(status.get("last_synced_at"))
        if synced is None:
            return None
        seen = parse_time(self._watermark)
        if seen is not None and synced <= seen:
            return None
        if not await self._write_watermark(status["last_synced_at"]):
            return None  # not recorded: fire at the next poll instead, rather than again after a restart
        self.log.info("%s synced at %s: firing", self.data_source_id, status["last_synced_at"])
        return TriggerEvent(dict(status))  # type: ignore[no-untyped-call]

    def _log_failure_once(self, status: Mapping[str, Any]) -> None:
        if status.get("status") != SyncStatus.FAILED:
            return
        attempt = status.get("last_attempt_at")
        if attempt == self._failure_logged:
            return
        self._failure_logged = attempt
        error = status.get("error")
        self.log.warning(
            "The sync of %s started at %s failed (%s); not an event: waiting for a successful one",
            self.data_source_id,
            attempt,
            error if error is not None else "no error given",
        )

    def _state_accessors(self) -> list[Any]:
        """Where the watermark lives: one accessor per watched asset; none without a state store.

        Every asset of a shared trigger keeps the same watermark (see docs/events.md).
        """
        # Airflow before 3.3 has no such attribute.
        return asset_state_accessors(getattr(self, "asset_state_store", None))

    async def _read_watermark(self) -> str | object | None:
        """The stored watermark; ``_NOTHING_STORED`` for a new watcher (or no store); ``_UNREAD`` on failure."""
        accessors = self._state_accessors()
        if not accessors:
            return _NOTHING_STORED
        key = watermark_key(self.analytics_conn_id, self._source)
        stored: list[Mapping[str, Any]] = []
        try:
            for accessor in accessors:
                value = await accessor.aget(key)
                if isinstance(value, Mapping):
                    stored.append(value)
        except STORE_ERRORS as exc:
            self.log.warning("Reading the watermark of %s failed, will try again: %s", self.data_source_id, exc)
            return _UNREAD
        if not stored:
            return _NOTHING_STORED
        # An asset added to a running watcher has none yet: the latest one reported for any asset counts.
        times = [value.get("last_synced_at") for value in stored]
        return max(times, key=lambda raw: parse_time(raw) or _NEVER)

    async def _write_watermark(self, last_synced_at: object) -> bool:
        """Record the sync reported (or seen first); ``False`` when the store refused it."""
        value = last_synced_at if isinstance(last_synced_at, str) else None
        key = watermark_key(self.analytics_conn_id, self._source)
        try:
            for accessor in self._state_accessors():
                await accessor.aset(key, {"last_synced_at": value})
        except STORE_ERRORS as exc:
            self.log.warning("Recording the watermark of %s failed, will try again: %s", self.data_source_id, exc)
            return False
        self._watermark = value
        return True


_UNREAD = object()
_NOTHING_STORED = object()
_NEVER = datetime.min.replace(tzinfo=UTC)
