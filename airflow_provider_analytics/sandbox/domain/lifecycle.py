"""Clock-driven state machines: the status of executions, reports and syncs computed from timestamps.

Nothing here runs in the background. A record stores when it started and how it will end, and its
status is worked out whenever it is read, so ``advance`` on the clock moves every machine at once.
"""

from __future__ import annotations

import math
import zlib
from datetime import datetime, timedelta

from airflow_provider_analytics.sandbox.domain.clock import rfc3339
from airflow_provider_analytics.sandbox.domain.config import Timings
from airflow_provider_analytics.sandbox.domain.records import (
    DataSourceRecord,
    ExecutionRecord,
    JsonDict,
    ReportRecord,
    SyncAttempt,
    WorkflowRecord,
)

EXECUTION_TERMINAL = frozenset({"succeeded", "failed", "cancelled"})
REPORT_FINISHED = frozenset({"ready", "failed", "expired"})
# The platform has no "cancelled" report state: a cancelled report ends failed, saying why.
CANCELLED_REPORT_ERROR = {"type": "cancelled", "message": "report generation was cancelled"}
REPORT_CONTENT_TYPES = {
    "pdf": "application/pdf",
    "csv": "text/csv; charset=utf-8",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "html": "text/html; charset=utf-8",
}


def _seconds(value: float) -> timedelta:
    return timedelta(seconds=value)


def _phases(duration: float | None, first: float, total: float) -> tuple[float, float]:
    """Seconds in the first state and in all: the record's own duration (a fifth of it first), else the timings'."""
    return (duration / 5, duration) if duration is not None else (first, total)


# --- executions -------------------------------------------------------------------------------


def execution_outputs(workflow: WorkflowRecord, inputs: JsonDict, canonical_inputs: str) -> JsonDict:
    """Believable outputs of a successful run, the same for the same workflow and inputs.

    :param workflow: the workflow that ran.
    :param inputs: the execution's inputs, echoed back.
    :param canonical_inputs: the inputs as canonical JSON, which seeds the numbers.
    """
    digest = zlib.crc32(f"{workflow.id}:{canonical_inputs}".encode())
    table_name = workflow.name.replace("-", "_").replace(" ", "_").lower()
    return {
        "rows_processed": 10_000 + digest % 990_000,
        "output_table": f"analytics.{table_name}",
        "duration_seconds": round(30 + (digest >> 8) % 600 + (digest % 100) / 100, 2),
        "inputs": inputs,
    }


def execution_error(workflow: WorkflowRecord) -> JsonDict:
    """The error a failed run of this workflow reports, naming its last step when it has one."""
    steps = workflow.configuration.get("steps")
    step_name = "run"
    if isinstance(steps, list) and steps:
        last = steps[-1]
        step_name = str(last.get("name", last)) if isinstance(last, dict) else str(last)
    return {"type": "step_failed", "message": f"step {step_name!r} failed: exit code 1"}


def execution_view(execution: ExecutionRecord, timings: Timings, now: datetime) -> JsonDict:
    """The execution as the API renders it at ``now``.

    :param execution: the stored execution.
    :param timings: the sandbox timings.
    :param now: the sandbox time of the read.
    """
    queued, total = _phases(execution.duration, timings.execution_queued, timings.execution_total)
    started_at = execution.created_at + _seconds(queued)
    natural_end = execution.created_at + _seconds(total)
    cancelled_at = execution.cancelled_at
    finished_at: datetime | None = None
    outputs: JsonDict | None = None
    error: JsonDict | None = None
    if cancelled_at is not None and cancelled_at <= now:
        status = "cancelled"
        finished_at = cancelled_at
        if cancelled_at < started_at:
            started_at_shown: datetime | None = None
        else:
            started_at_shown = started_at
    elif now < started_at:
        status, started_at_shown = "queued", None
    elif now < natural_end:
        status, started_at_shown = "running", started_at
    else:
        status, started_at_shown, finished_at = execution.outcome, started_at, natural_end
        outputs = execution.outputs if status == "succeeded" else None
        error = execution.error if status == "failed" else None
    return {
        "id": execution.id,
        "workflow_id": execution.workflow_id,
        "status": status,
        "inputs": execution.inputs,
        "outputs": outputs,
        "error": error,
        "created_at": rfc3339(execution.created_at),
        "started_at": rfc3339(started_at_shown),
        "finished_at": rfc3339(finished_at),
    }


# --- reports ----------------------------------------------------------------------------------


def _report_ready_at(report: ReportRecord, timings: Timings) -> datetime | None:
    """When the report becomes ready: after its timed phases *and* after rendering finished."""
    if report.rendered_at is None:
        return None
    return max(report.created_at + _seconds(report_total(report, timings)), report.rendered_at)


def report_total(report: ReportRecord, timings: Timings) -> float:
    """Seconds from the report's creation to the earliest moment it can be ready (or fail).

    :param report: the stored report.
    :param timings: the sandbox timings.
    """
    return _phases(report.duration, timings.report_pending, timings.report_total)[1]


def report_status(report: ReportRecord, timings: Timings, now: datetime) -> str:
    """The report's status at ``now``.

    :param report: the stored report.
    :param timings: the sandbox timings.
    :param now: the sandbox time of the read.
    """
    if report.cancelled_at is not None and now >= report.cancelled_at:
        return "failed"
    pending, total = _phases(report.duration, timings.report_pending, timings.report_total)
    if report.outcome == "failed":
        if now >= report.created_at + _seconds(total):
            return "failed"
    elif report.expired_at is not None and now >= report.expired_at:
        return "expired"
    else:
        ready_at = _report_ready_at(report, timings)
        if ready_at is not None and now >= ready_at:
            return "expired" if now >= ready_at + _seconds(timings.report_ttl) else "ready"
    return "pending" if now < report.created_at + _seconds(pending) else "generating"


def report_view(report: ReportRecord, timings: Timings, now: datetime) -> JsonDict:
    """The report as the API renders it at ``now``.

    :param report: the stored report.
    :param timings: the sandbox timings.
    :param now: the sandbox time of the read.
    """
    status = report_status(report, timings, now)
    view: JsonDict = {
        "id": report.id,
        "name": report.name,
        "dashboard_ids": list(report.dashboard_ids),
        "format": report.format,
        "parameters": report.parameters,
        "status": status,
        "error": (CANCELLED_REPORT_ERROR if report.cancelled_at else report.error) if status == "failed" else None,
        "size_bytes": None,
        "sha256": None,
        "content_type": None,
        "created_at": rfc3339(report.created_at),
        "completed_at": None,
        "expires_at": None,
    }
    if status == "failed":
        failed_at = report.cancelled_at or report.created_at + _seconds(report_total(report, timings))
        view["completed_at"] = rfc3339(failed_at)
    ready_at = _report_ready_at(report, timings)
    if status in ("ready", "expired") and ready_at is not None and report.content is not None:
        expires_at = ready_at + _seconds(timings.report_ttl)
        if report.expired_at is not None:
            expires_at = min(expires_at, report.expired_at)
        view.update(
            size_bytes=len(report.content),
            sha256=report.sha256,
            content_type=REPORT_CONTENT_TYPES[report.format],
            completed_at=rfc3339(min(ready_at, expires_at)),
            expires_at=rfc3339(expires_at),
        )
    return view


# --- data-source syncs ------------------------------------------------------------------------


def _attempt_finished_at(attempt: SyncAttempt, timings: Timings) -> datetime:
    return attempt.started_at + _seconds(timings.sync_total)


def settle_sync(source: DataSourceRecord, timings: Timings, now: datetime) -> None:
    """Fold a finished, successful current attempt into ``last_synced_at`` before a new one starts.

    An attempt still running at ``now`` is simply abandoned: the new attempt supersedes it.

    :param source: the data source to update.
    :param timings: the sandbox timings.
    :param now: the moment the next attempt starts.
    """
    attempt = source.attempt
    if attempt is None or attempt.outcome != "synced":
        return
    finished_at = _attempt_finished_at(attempt, timings)
    if finished_at <= now and (source.last_synced_at is None or finished_at > source.last_synced_at):
        source.last_synced_at = finished_at


def start_sync(
    source: DataSourceRecord, timings: Timings, now: datetime, outcome: str, error: JsonDict | None = None
) -> None:
    """Begin a new sync attempt at ``now``.

    :param source: the data source to sync.
    :param timings: the sandbox timings.
    :param now: the start time of the attempt.
    :param outcome: ``synced`` or ``failed``.
    :param error: the error a failed attempt reports (a default one is used when omitted).
    """
    if outcome not in ("synced", "failed"):
        raise ValueError(f"sync outcome must be 'synced' or 'failed', not {outcome!r}")
    settle_sync(source, timings, now)
    if outcome == "failed" and error is None:
        error = {"type": "sync_failed", "message": f"could not reach {source.type} data source {source.id}"}
    source.attempt = SyncAttempt(started_at=now, outcome=outcome, error=error if outcome == "failed" else None)
    source.history.append(source.attempt)


def apply_auto_sync(source: DataSourceRecord, timings: Timings, anchor: datetime, now: datetime) -> None:
    """Start the scheduled sync that is due by ``now``, if any (syncs start every interval from anchor).

    Only the latest due tick matters: earlier ticks are folded into ``last_synced_at``. A tick that
    falls while another attempt is still running is skipped, as a real scheduler would do.

    :param source: the data source to update.
    :param timings: the sandbox timings (``auto_sync_interval`` must be set for anything to happen).
    :param anchor: the time the schedule counts from.
    :param now: the sandbox time of the read.
    """
    interval = timings.auto_sync_interval
    if not interval or now <= anchor:
        return
    ticks = math.floor((now - anchor).total_seconds() / interval)
    if ticks < 1:
        return
    tick = anchor + _seconds(ticks * interval)
    attempt = source.attempt
    if attempt is not None and (attempt.started_at >= tick or _attempt_finished_at(attempt, timings) > tick):
        return
    previous_tick = tick - _seconds(interval)
    if ticks >= 2 and (attempt is None or previous_tick > attempt.started_at):
        # The tick before this one also ran and finished; it is the freshest completed sync.
        settle_sync(source, timings, tick)
        source.attempt = SyncAttempt(started_at=previous_tick, outcome="synced")
        source.history.append(source.attempt)
    start_sync(source, timings, tick, "synced")


def sync_view(source: DataSourceRecord, timings: Timings, now: datetime) -> JsonDict:
    """The sync status of a data source at ``now`` (the body of ``GET /v1/data-sources/:id/sync``).

    :param source: the data source.
    :param timings: the sandbox timings.
    :param now: the sandbox time of the read.
    """
    attempt = source.attempt
    last_synced_at = source.last_synced_at
    error: JsonDict | None = None
    if attempt is None:
        status = "synced" if last_synced_at is not None else "never_synced"
        last_attempt_at = None
    else:
        last_attempt_at = attempt.started_at
        elapsed = (now - attempt.started_at).total_seconds()
        if elapsed < timings.sync_pending:
            status = "pending"
        elif elapsed < timings.sync_total:
            status = "syncing"
        else:
            status = attempt.outcome
            if attempt.outcome == "synced":
                last_synced_at = _attempt_finished_at(attempt, timings)
            else:
                error = attempt.error
    return {
        "data_source_id": source.id,
        "status": status,
        "last_synced_at": rfc3339(last_synced_at),
        "last_attempt_at": rfc3339(last_attempt_at),
        "error": error,
    }


def sync_history(source: DataSourceRecord, timings: Timings) -> list[JsonDict]:
    """Every sync attempt of a data source started so far, oldest first, with when it ends (or ended).

    An attempt that a later one replaced while it ran is ``superseded`` and has no ``finished_at``.

    :param source: the data source.
    :param timings: the sandbox timings.
    """
    views = []
    for position, attempt in enumerate(source.history):
        finished_at = _attempt_finished_at(attempt, timings)
        later = source.history[position + 1 :]
        # A sync started while another still ran supersedes it: the earlier one never finishes.
        superseded = bool(later) and later[0].started_at < finished_at
        views.append({
            "started_at": rfc3339(attempt.started_at),
            "finished_at": None if superseded else rfc3339(finished_at),
            "outcome": "superseded" if superseded else attempt.outcome,
        })  # fmt: skip
    return views


def data_source_view(source: DataSourceRecord, timings: Timings, now: datetime) -> JsonDict:
    """The data source as the API renders it at ``now`` (secrets were never stored).

    :param source: the data source.
    :param timings: the sandbox timings.
    :param now: the sandbox time of the read.
    """
    sync = sync_view(source, timings, now)
    return {
        "id": source.id,
        "name": source.name,
        "type": source.type,
        "connection": dict(source.connection),
        "created_at": rfc3339(source.created_at),
        "sync": {"status": sync["status"], "last_synced_at": sync["last_synced_at"]},
    }
