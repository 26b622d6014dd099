"""Waits for a data source to have synced after a given time; what that means is in ``_jobs/syncs.py``."""

from __future__ import annotations

from typing import Any

from airflow_provider_analytics._jobs.syncs import SyncJob
from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger

__all__ = ["DataSourceSyncTrigger"]


class DataSourceSyncTrigger(AnalyticsPollTrigger):
    """Fires when ``last_synced_at >= synced_after`` (success) or a sync failed after it (failure).

    :param data_source_id: the data source's id.
    :param synced_after: ISO 8601 time with an offset; the data must be fresh from then on.
    :param fail_on_sync_failure: fire a failure for a sync that failed after ``synced_after``.
    :param kwargs: ``poll_interval``, ``deadline``, ``analytics_conn_id``, ``try_number``.
    """

    kind = SyncJob.kind

    def __init__(
        self, *, data_source_id: str, synced_after: str, fail_on_sync_failure: bool = True, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.data_source_id = data_source_id
        self.synced_after = synced_after
        self.fail_on_sync_failure = fail_on_sync_failure
        # Built here so a malformed synced_after fails when the trigger is made, not at its first poll.
        self._job = SyncJob(data_source_id, synced_after, fail_on_sync_failure)

    @property
    def job(self) -> SyncJob:
        return self._job
