"""Waits for a data source to have synced after a given time."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from airflow_provider_analytics.hooks.analytics import AnalyticsAsyncHook
from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from airflow_provider_analytics.wire.outcomes import Outcome, parse_time, sync_outcome


class DataSourceSyncTrigger(AnalyticsPollTrigger):
    """Fires when ``last_synced_at >= synced_after`` (success) or a sync failed after it (failure).

    :param data_source_id: the data source's id.
    :param synced_after: ISO 8601 time with an offset; the data must be fresh from then on.
    :param fail_on_sync_failure: fire a failure for a sync that failed after ``synced_after``.
    :param kwargs: ``poll_interval``, ``deadline``, ``analytics_conn_id``.
    """

    kind = "sync"

    def __init__(
        self, *, data_source_id: str, synced_after: str, fail_on_sync_failure: bool = True, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.data_source_id = data_source_id
        self.synced_after = synced_after
        self.fail_on_sync_failure = fail_on_sync_failure
        parsed = parse_time(synced_after)
        if parsed is None:
            raise AnalyticsInputError(f"synced_after must be an ISO 8601 time with an offset, got {synced_after!r}")
        self._synced_after: datetime = parsed

    @property
    def target(self) -> dict[str, Any]:
        return {
            "data_source_id": self.data_source_id,
            "synced_after": self.synced_after,
            "fail_on_sync_failure": self.fail_on_sync_failure,
        }

    async def fetch(self, hook: AnalyticsAsyncHook) -> Mapping[str, Any]:
        return await hook.get_sync_status(self.data_source_id)

    def outcome(self, resource: Mapping[str, Any]) -> Outcome | None:
        return sync_outcome(resource, self._synced_after, self.fail_on_sync_failure)
