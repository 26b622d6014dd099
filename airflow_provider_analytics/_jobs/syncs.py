"""Everything about a data source's sync: its ids, its read, its verdict and its name.

A sync cannot be cancelled: the platform runs it on its own schedule, the task only watches for freshness.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics._jobs.base import RemoteJob
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._outcomes import sync_outcome
from airflow_provider_analytics.wire._times import parse_time
from airflow_provider_analytics.wire.errors import AnalyticsInputError, clean_text

if TYPE_CHECKING:
    from airflow_provider_analytics.wire._calls import Call
    from airflow_provider_analytics.wire._models import SyncState
    from airflow_provider_analytics.wire._outcomes import Outcome

# How a source's status reads while its data is not fresh enough yet (see SyncJob.state_of).
_WAITING_PHRASES = {
    "pending": "has a sync pending",
    "syncing": "is syncing",
    "failed": "failed its last sync",
}


class SyncJob(RemoteJob):
    """Fresh data: success once ``last_synced_at >= synced_after``; failure for a sync failed after it.

    :param data_source_id: the data source's id.
    :param synced_after: ISO 8601 time with an offset; the data must be fresh from then on.
    :param fail_on_sync_failure: a sync that failed after ``synced_after`` is a failure (else keep waiting).
    :raises AnalyticsInputError: ``synced_after`` is not such a time.
    """

    kind = "sync"
    # A sync's attempt starts at last_attempt_at; a successful one ends at last_synced_at (a failed one says not when).
    timestamps = ("last_attempt_at", "last_synced_at")
    __slots__ = ("data_source_id", "fail_on_sync_failure", "synced_after", "threshold")
    data_source_id: str
    synced_after: str
    fail_on_sync_failure: bool
    threshold: datetime  # synced_after, parsed (not part of the target: the same time in other words)

    def __init__(self, data_source_id: str, synced_after: str, fail_on_sync_failure: bool = True) -> None:
        threshold = parse_time(synced_after)
        if threshold is None:
            raise AnalyticsInputError(f"synced_after must be an ISO 8601 time with an offset, got {synced_after!r}")
        self._set(
            data_source_id=data_source_id,
            synced_after=synced_after,
            fail_on_sync_failure=fail_on_sync_failure,
            threshold=threshold,
        )

    @property
    def target(self) -> dict[str, Any]:
        return {
            "data_source_id": self.data_source_id,
            "synced_after": self.synced_after,
            "fail_on_sync_failure": self.fail_on_sync_failure,
        }

    @classmethod
    def from_target(cls, target: Mapping[str, Any]) -> SyncJob:
        return cls(
            data_source_id=target.get("data_source_id"),  # type: ignore[arg-type]
            synced_after=target.get("synced_after"),  # type: ignore[arg-type]
            fail_on_sync_failure=bool(target.get("fail_on_sync_failure", True)),
        )

    def fetch(self) -> Call[SyncState]:
        return self.checked(endpoints.get_sync_status(self.data_source_id))

    @property
    def answer_ids(self) -> dict[str, str]:
        return {"data_source_id": self.data_source_id}

    def outcome(self, resource: Mapping[str, Any]) -> Outcome | None:
        return sync_outcome(resource, self.threshold, self.fail_on_sync_failure)

    def describe(self) -> str:
        return f"the sync of data source {self.data_source_id}"

    def state_of(self, resource: Mapping[str, Any]) -> str:
        # Freshness decides, so the clause says when the data last synced: a status alone ("synced") would
        # read as done while the data is older than ``synced_after``.
        source = f"data source {self.data_source_id}"
        # Platform text (times, a status the contract does not know): folded and capped before it reaches a message.
        last_synced = None if resource.get("last_synced_at") is None else clean_text(resource["last_synced_at"], 200)
        outcome = self.outcome(resource)
        if outcome == "success":
            return f"{source} synced at {last_synced}"
        if outcome == "failure":
            return f"the sync of {source} failed at {clean_text(resource.get('last_attempt_at'), 200)}"
        status = clean_text(resource.get("status", "unknown"), 200)
        if status == "never_synced" or (last_synced is None and status == "synced"):
            return f"{source} has never synced"
        after = self.synced_after
        stale = "never synced before" if last_synced is None else f"last synced at {last_synced}, before {after}"
        if status == "synced":
            return f"{source} {stale}"
        return f"{source} {_WAITING_PHRASES.get(status, f'is {status}')} ({stale})"
