"""When a wait is over, decided once for worker polling, sensors and triggers alike.

Each function returns ``None`` while the wait goes on, else ``"success"`` or ``"failure"``. The event a
trigger fires with is another matter: ``_jobs/events.py`` owns it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from airflow_provider_analytics.wire._contract import ExecutionStatus, ReportStatus, SyncStatus
from airflow_provider_analytics.wire._times import parse_time

# The verdict on a wait that is over: the work succeeded, or it ended and will not succeed.
Outcome = Literal["success", "failure"]


def execution_outcome(execution: Mapping[str, Any]) -> Outcome | None:
    """``succeeded`` is success; ``failed`` and ``cancelled`` are failures; anything else keeps waiting."""
    status = execution.get("status")
    if status == ExecutionStatus.SUCCEEDED:
        return "success"
    if status in (ExecutionStatus.FAILED, ExecutionStatus.CANCELLED):
        return "failure"
    return None


def report_outcome(report: Mapping[str, Any]) -> Outcome | None:
    """``ready`` is success; ``failed`` and ``expired`` are failures; anything else keeps waiting."""
    status = report.get("status")
    if status == ReportStatus.READY:
        return "success"
    if status in (ReportStatus.FAILED, ReportStatus.EXPIRED):
        return "failure"
    return None


def sync_outcome(sync: Mapping[str, Any], synced_after: datetime, fail_on_sync_failure: bool = True) -> Outcome | None:
    """Freshness, not status: synced once ``last_synced_at >= synced_after``.

    A sync counts as failed after ``synced_after`` when its status is ``failed`` and ``last_attempt_at``
    is at or after it; an older failure is history, not an answer.

    :param sync: the sync status object.
    :param synced_after: the aware time the data must be fresh from.
    :param fail_on_sync_failure: report a recent failed sync as a failure (else keep waiting).
    """
    last_synced = parse_time(sync.get("last_synced_at"))
    if last_synced is not None and last_synced >= synced_after:
        return "success"
    if fail_on_sync_failure and sync.get("status") == SyncStatus.FAILED:
        last_attempt = parse_time(sync.get("last_attempt_at"))
        if last_attempt is not None and last_attempt >= synced_after:
            return "failure"
    return None
