"""Triggers: serialization round trips, the poll loop against the sandbox, and the pure wait outcomes.

No Airflow database is needed: connections come from ``AIRFLOW_CONN_ANALYTICS_DEFAULT`` (set by the
``sandbox`` fixture) and triggers are drained with ``asyncio.run``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

import airflow_provider_analytics.triggers as triggers_package
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger
from airflow_provider_analytics.triggers.data_sources import DataSourceSyncTrigger
from airflow_provider_analytics.triggers.executions import ExecutionTrigger
from airflow_provider_analytics.triggers.reports import ReportTrigger
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from airflow_provider_analytics.wire.outcomes import execution_outcome, parse_time, report_outcome, sync_outcome
from tests.support.context import SLOW
from tests.support.triggers import (
    DATA_SOURCE,
    POLL,
    WORKFLOW,
    execution_path,
    execution_view,
    only_event,
    report_view,
    requests_to,
    set_connection,
    soon,
)

# Serialization ----------------------------------------------------------------------------------------

TRIGGERS = [
    pytest.param(ExecutionTrigger(workflow_id=WORKFLOW, execution_id="ex_abc123", poll_interval=5), id="execution"),
    pytest.param(
        ExecutionTrigger(
            workflow_id=WORKFLOW,
            execution_id="ex_abc123",
            poll_interval=2.5,
            deadline=1795000000.25,
            analytics_conn_id="analytics_other",
        ),
        id="execution-deadline-conn",
    ),
    pytest.param(ReportTrigger(report_id="rp_abc123", poll_interval=10), id="report"),
    pytest.param(ReportTrigger(report_id="rp_abc123", poll_interval=1, deadline=1795000000.0), id="report-deadline"),
    pytest.param(
        DataSourceSyncTrigger(data_source_id=DATA_SOURCE, synced_after="2026-11-21T10:00:00.123456Z", poll_interval=30),
        id="sync",
    ),
    pytest.param(
        DataSourceSyncTrigger(
            data_source_id=DATA_SOURCE,
            synced_after="2026-11-21T11:00:00+01:00",
            fail_on_sync_failure=False,
            poll_interval=0.5,
            deadline=1795000000.5,
            analytics_conn_id="analytics_other",
        ),
        id="sync-no-fail-deadline-conn",
    ),
]


def test_every_trigger_class_is_round_tripped() -> None:
    """A new trigger class must be added to ``TRIGGERS`` so its serialization is tested."""
    found = set()
    for info in pkgutil.iter_modules(triggers_package.__path__):
        module = importlib.import_module(f"{triggers_package.__name__}.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(cls, AnalyticsPollTrigger)
                and not inspect.isabstract(cls)
                and cls.__module__ == module.__name__
            ):
                found.add(cls)
    tested = {type(param.values[0]) for param in TRIGGERS}
    assert found == tested


@pytest.mark.parametrize("trigger", TRIGGERS)
def test_serialize_round_trips(trigger: AnalyticsPollTrigger) -> None:
    classpath, kwargs = trigger.serialize()
    assert json.loads(json.dumps(kwargs)) == kwargs  # plain JSON values: no datetimes, tuples, enums
    assert {"poll_interval", "deadline", "analytics_conn_id"} <= set(kwargs)
    assert set(trigger.target) <= set(kwargs)

    module_name, _, class_name = classpath.rpartition(".")
    cls = getattr(importlib.import_module(module_name), class_name)
    assert cls is type(trigger)
    rebuilt = cls(**kwargs)
    assert rebuilt.serialize() == (classpath, kwargs)
    assert rebuilt.target == trigger.target


@pytest.mark.parametrize("trigger", TRIGGERS)
def test_round_trips_through_airflow_serde_and_trigger_row(trigger: AnalyticsPollTrigger) -> None:
    """The paths Airflow really uses: serde at defer time, the encrypted ``Trigger`` row, then re-import."""
    from airflow.models.trigger import Trigger
    from airflow.sdk.serde import deserialize, serialize

    classpath, kwargs = trigger.serialize()
    assert deserialize(serialize(kwargs)) == kwargs

    row = Trigger.from_object(trigger)
    assert row.classpath == classpath
    assert row.encrypted_kwargs != json.dumps(kwargs)  # stored encrypted
    assert row.kwargs == kwargs
    module_name, _, class_name = row.classpath.rpartition(".")
    rebuilt = getattr(importlib.import_module(module_name), class_name)(**row.kwargs)
    assert rebuilt.serialize() == (classpath, kwargs)


@pytest.mark.parametrize("synced_after", ["", "yesterday", "2026-11-21T10:00:00", "2026-11-21"])
def test_sync_trigger_refuses_a_time_without_an_offset(synced_after: str) -> None:
    with pytest.raises(AnalyticsInputError, match="synced_after must be an ISO 8601 time with an offset"):
        DataSourceSyncTrigger(data_source_id=DATA_SOURCE, synced_after=synced_after, poll_interval=1)


# Executions -------------------------------------------------------------------------------------------


def test_execution_trigger_fires_success(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    execution = hook.execute_workflow(WORKFLOW, {"day": "2026-11-20"})
    trigger = ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=soon())

    event = only_event(trigger)

    final = execution_view(sandbox, execution["id"])
    assert final["status"] == "succeeded"
    assert event == {
        "status": "success",
        "kind": "execution",
        "target": {"workflow_id": WORKFLOW, "execution_id": execution["id"]},
        "resource": final,
        "message": "execution is succeeded",
    }
    assert event["resource"]["outputs"]["inputs"] == {"day": "2026-11-20"}
    gets = requests_to(sandbox, execution_path(WORKFLOW, execution["id"]))
    assert len(gets) >= 2  # it polled until the end
    assert set(gets) == {200}


@pytest.mark.parametrize(
    ("workflow_id", "error"),
    [
        ("wf_legacy_export", None),
        (WORKFLOW, {"type": "quota_exceeded", "message": "warehouse credits used up"}),
    ],
)
def test_execution_trigger_fires_failure(
    sandbox: SandboxServer, hook: AnalyticsHook, workflow_id: str, error: dict[str, str] | None
) -> None:
    if error is not None:
        sandbox.state.set_execution_outcome(workflow_id, "failed", error=error)
    execution = hook.execute_workflow(workflow_id)
    trigger = ExecutionTrigger(
        workflow_id=workflow_id, execution_id=execution["id"], poll_interval=POLL, deadline=soon()
    )

    event = only_event(trigger)

    final = execution_view(sandbox, execution["id"])
    assert event == {
        "status": "failure",
        "kind": "execution",
        "target": {"workflow_id": workflow_id, "execution_id": execution["id"]},
        "resource": final,
        "message": "execution is failed",
    }
    assert final["status"] == "failed"
    if error is None:
        assert final["error"]["type"] == "step_failed"
    else:
        assert final["error"] == error


def test_execution_trigger_fires_failure_for_a_cancelled_execution(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    sandbox.state.set_timings(SLOW)
    execution = hook.execute_workflow(WORKFLOW)
    hook.cancel_execution(WORKFLOW, execution["id"])
    event = only_event(
        ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=soon())
    )
    assert (event["status"], event["resource"]["status"], event["message"]) == (
        "failure",
        "cancelled",
        "execution is cancelled",
    )


def test_execution_trigger_times_out_with_the_last_state_seen(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    sandbox.state.set_timings(SLOW)
    execution = hook.execute_workflow(WORKFLOW)
    trigger = ExecutionTrigger(
        workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=time.time() + 0.4
    )

    started = time.monotonic()
    event = only_event(trigger)
    elapsed = time.monotonic() - started

    assert event == {
        "status": "timeout",
        "kind": "execution",
        "target": {"workflow_id": WORKFLOW, "execution_id": execution["id"]},
        "resource": execution_view(sandbox, execution["id"]),
        "message": f"gave up waiting for execution {trigger.target}",
    }
    assert event["resource"]["status"] == "queued"
    assert 0.3 <= elapsed < 3  # waited for the deadline, and not much longer
    assert len(requests_to(sandbox, execution_path(WORKFLOW, execution["id"]))) >= 3
    # A trigger only reads: nothing was cancelled or started.
    assert [r.method for r in sandbox.state.requests] == ["POST"] + ["GET"] * (len(sandbox.state.requests) - 1)


def test_execution_trigger_with_a_past_deadline_polls_once_then_times_out(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    sandbox.state.set_timings(SLOW)
    execution = hook.execute_workflow(WORKFLOW)
    trigger = ExecutionTrigger(
        workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=60, deadline=time.time() - 1
    )

    event = only_event(trigger)

    assert event["status"] == "timeout"
    assert event["resource"]["status"] == "queued"
    assert requests_to(sandbox, execution_path(WORKFLOW, execution["id"])) == [200]


def test_past_deadline_still_reports_a_finished_execution_as_success(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    """A triggerer restarted after the deadline must not time out work that already succeeded."""
    execution = hook.execute_workflow(WORKFLOW)
    sandbox.state.advance(60)
    event = only_event(
        ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=60, deadline=time.time() - 1)
    )
    assert event["status"] == "success"


@pytest.mark.parametrize(
    ("fault", "recorded"),
    [
        pytest.param(lambda path: Fault.status(503, path=path, times=3), 503, id="503"),
        pytest.param(lambda path: Fault.status(429, path=path, times=3), 429, id="429"),
        pytest.param(lambda path: Fault.drop(path=path, times=3), 0, id="dropped-connection"),
    ],
)
def test_execution_trigger_keeps_polling_through_transient_errors(
    sandbox: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch, fault: Any, recorded: int
) -> None:
    execution = hook.execute_workflow(WORKFLOW)
    path = execution_path(WORKFLOW, execution["id"])
    set_connection(monkeypatch, sandbox, max_retries=0)  # so each fault reaches the trigger itself
    sandbox.state.inject(fault(f"{path}$"))

    event = only_event(
        ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=soon())
    )

    assert event["status"] == "success"
    assert event["resource"] == execution_view(sandbox, execution["id"])
    statuses = requests_to(sandbox, path)
    assert statuses[:3] == [recorded] * 3
    assert statuses[3:]
    assert set(statuses[3:]) == {200}


def test_execution_trigger_times_out_when_the_platform_never_recovers(
    sandbox: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    execution = hook.execute_workflow(WORKFLOW)
    path = execution_path(WORKFLOW, execution["id"])
    set_connection(monkeypatch, sandbox, max_retries=0)
    sandbox.state.inject(Fault.status(503, path=f"{path}$", times=1000))

    event = only_event(
        ExecutionTrigger(
            workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=time.time() + 0.3
        )
    )

    assert event["status"] == "timeout"
    assert event["resource"] is None  # never saw a state
    statuses = requests_to(sandbox, path)
    assert len(statuses) >= 2
    assert set(statuses) == {503}


def test_execution_trigger_reports_unknown_execution_as_error(sandbox: SandboxServer) -> None:
    trigger = ExecutionTrigger(
        workflow_id=WORKFLOW, execution_id="ex_doesnotexist", poll_interval=POLL, deadline=soon()
    )

    event = only_event(trigger)

    assert event["status"] == "error"
    assert event["resource"] is None
    assert event["target"] == {"workflow_id": WORKFLOW, "execution_id": "ex_doesnotexist"}
    assert "404" in event["message"]
    assert "not_found" in event["message"]
    assert requests_to(sandbox, execution_path(WORKFLOW, "ex_doesnotexist")) == [404]  # not retried, not re-polled


def test_execution_trigger_reports_a_rejected_token_as_error(
    sandbox: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    execution = hook.execute_workflow(WORKFLOW)
    set_connection(monkeypatch, sandbox, token="not-a-valid-token")

    event = only_event(
        ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=soon())
    )

    assert event["status"] == "error"
    assert event["resource"] is None
    assert "401" in event["message"]
    assert "not-a-valid-token" not in event["message"]
    assert requests_to(sandbox, execution_path(WORKFLOW, execution["id"])) == [401]


def test_error_after_a_successful_poll_keeps_the_last_state(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    sandbox.state.set_timings(SLOW)
    execution = hook.execute_workflow(WORKFLOW)
    path = execution_path(WORKFLOW, execution["id"])
    # Faults are consumed in order: the first poll gets the normal answer (queued), the second a 403.
    sandbox.state.inject(Fault.delay(0, path=f"{path}$"), Fault.status(403, path=f"{path}$"))

    event = only_event(
        ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=soon())
    )

    assert event["status"] == "error"
    assert "403" in event["message"]
    assert event["resource"] == execution_view(sandbox, execution["id"])
    assert event["resource"]["status"] == "queued"
    assert requests_to(sandbox, path) == [200, 403]


def test_trigger_uses_the_async_connection_lookup(
    sandbox: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A blocking lookup inside the triggerer's event loop is what broke other providers."""
    from airflow.sdk import BaseHook

    execution = hook.execute_workflow(WORKFLOW)

    def blocking_lookup(cls: Any, conn_id: str) -> Any:
        raise AssertionError(f"blocking get_connection({conn_id!r}) called from a trigger")

    monkeypatch.setattr(BaseHook, "get_connection", classmethod(blocking_lookup))
    event = only_event(
        ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=soon())
    )
    assert event["status"] == "success"


# Reports ----------------------------------------------------------------------------------------------


def test_report_trigger_fires_success(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    report = hook.generate_report(["db_sales"], "csv")
    event = only_event(ReportTrigger(report_id=report["id"], poll_interval=POLL, deadline=soon()))
    final = report_view(sandbox, report["id"])
    assert final["status"] == "ready"
    assert event == {
        "status": "success",
        "kind": "report",
        "target": {"report_id": report["id"]},
        "resource": final,
        "message": "report is ready",
    }


def test_report_trigger_fires_failure(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    sandbox.state.set_report_outcome("failed")
    report = hook.generate_report(["db_sales"], "pdf")
    event = only_event(ReportTrigger(report_id=report["id"], poll_interval=POLL, deadline=soon()))
    final = report_view(sandbox, report["id"])
    assert event == {
        "status": "failure",
        "kind": "report",
        "target": {"report_id": report["id"]},
        "resource": final,
        "message": "report is failed",
    }
    assert final["error"]["type"] == "render_failed"


def test_report_trigger_fires_failure_for_an_expired_report(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    report = hook.generate_report(["db_sales"], "csv")
    sandbox.state.advance(5)
    assert report_view(sandbox, report["id"])["status"] == "ready"
    sandbox.state.expire_report(report["id"])
    event = only_event(ReportTrigger(report_id=report["id"], poll_interval=POLL, deadline=soon()))
    assert (event["status"], event["resource"]["status"]) == ("failure", "expired")


def test_report_trigger_times_out(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    sandbox.state.set_timings(SLOW)
    report = hook.generate_report(["db_sales"], "csv")
    event = only_event(ReportTrigger(report_id=report["id"], poll_interval=POLL, deadline=time.time() + 0.2))
    assert event == {
        "status": "timeout",
        "kind": "report",
        "target": {"report_id": report["id"]},
        "resource": report_view(sandbox, report["id"]),
        "message": f"gave up waiting for report {{'report_id': '{report['id']}'}}",
    }
    assert event["resource"]["status"] == "pending"


def test_report_trigger_keeps_polling_through_503s(
    sandbox: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = hook.generate_report(["db_sales"], "csv")
    path = f"/v1/reports/{report['id']}"
    set_connection(monkeypatch, sandbox, max_retries=0)
    sandbox.state.inject(Fault.status(503, path=f"{path}$", times=2))
    event = only_event(ReportTrigger(report_id=report["id"], poll_interval=POLL, deadline=soon()))
    assert event["status"] == "success"
    statuses = requests_to(sandbox, path)
    assert statuses[:2] == [503, 503]
    assert statuses[-1] == 200


def test_report_trigger_reports_unknown_report_as_error(sandbox: SandboxServer) -> None:
    event = only_event(ReportTrigger(report_id="rp_doesnotexist", poll_interval=POLL, deadline=soon()))
    assert event["status"] == "error"
    assert event["resource"] is None
    assert "404" in event["message"]


# Data source syncs ------------------------------------------------------------------------------------


def sync_status(hook: AnalyticsHook, data_source_id: str = DATA_SOURCE) -> dict[str, Any]:
    return dict(hook.get_sync_status(data_source_id))


def test_sync_trigger_fires_success_once_a_sync_after_the_threshold_finished(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    synced_after = sandbox.state.now().isoformat()
    sandbox.state.start_sync(DATA_SOURCE, outcome="synced")
    trigger = DataSourceSyncTrigger(
        data_source_id=DATA_SOURCE, synced_after=synced_after, poll_interval=POLL, deadline=soon()
    )

    event = only_event(trigger)

    final = sync_status(hook)
    assert final["status"] == "synced"
    assert event == {
        "status": "success",
        "kind": "sync",
        "target": {"data_source_id": DATA_SOURCE, "synced_after": synced_after, "fail_on_sync_failure": True},
        "resource": final,
        "message": "sync is synced",
    }
    last_synced = parse_time(final["last_synced_at"])
    assert last_synced is not None
    assert last_synced >= datetime.fromisoformat(synced_after)
    assert len(requests_to(sandbox, f"/v1/data-sources/{DATA_SOURCE}/sync")) >= 2  # waited through pending/syncing


def test_sync_trigger_fires_failure_for_a_sync_that_failed_after_the_threshold(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    synced_after = sandbox.state.now().isoformat().replace("+00:00", "Z")
    sandbox.state.start_sync(DATA_SOURCE, outcome="failed")
    event = only_event(
        DataSourceSyncTrigger(
            data_source_id=DATA_SOURCE, synced_after=synced_after, poll_interval=POLL, deadline=soon()
        )
    )
    final = sync_status(hook)
    assert event == {
        "status": "failure",
        "kind": "sync",
        "target": {"data_source_id": DATA_SOURCE, "synced_after": synced_after, "fail_on_sync_failure": True},
        "resource": final,
        "message": "sync is failed",
    }
    assert final["error"]["type"] == "sync_failed"


def test_sync_trigger_ignores_a_failure_from_before_the_threshold(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    sandbox.state.start_sync(DATA_SOURCE, outcome="failed")
    sandbox.state.advance(5)
    assert sync_status(hook)["status"] == "failed"
    synced_after = sandbox.state.now().isoformat()

    event = only_event(
        DataSourceSyncTrigger(
            data_source_id=DATA_SOURCE, synced_after=synced_after, poll_interval=POLL, deadline=time.time() + 0.2
        )
    )

    assert event["status"] == "timeout"
    assert event["resource"]["status"] == "failed"


def test_sync_trigger_keeps_waiting_after_a_failure_without_fail_on_sync_failure(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    synced_after = sandbox.state.now().isoformat()
    sandbox.state.start_sync(DATA_SOURCE, outcome="failed")
    sandbox.state.advance(5)
    event = only_event(
        DataSourceSyncTrigger(
            data_source_id=DATA_SOURCE,
            synced_after=synced_after,
            fail_on_sync_failure=False,
            poll_interval=POLL,
            deadline=time.time() + 0.2,
        )
    )
    assert event["status"] == "timeout"
    assert event["resource"]["status"] == "failed"
    assert event["target"]["fail_on_sync_failure"] is False


def test_sync_trigger_times_out_on_stale_data(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    """The seeded source reads ``synced``, but from yesterday: status alone must not satisfy the wait."""
    synced_after = sandbox.state.now().isoformat()
    event = only_event(
        DataSourceSyncTrigger(
            data_source_id=DATA_SOURCE, synced_after=synced_after, poll_interval=POLL, deadline=time.time() + 0.2
        )
    )
    assert event == {
        "status": "timeout",
        "kind": "sync",
        "target": {"data_source_id": DATA_SOURCE, "synced_after": synced_after, "fail_on_sync_failure": True},
        "resource": sync_status(hook),
        "message": f"gave up waiting for sync {event['target']}",
    }
    assert event["resource"]["status"] == "synced"


def test_sync_trigger_succeeds_while_a_newer_sync_is_running(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    """Freshness, not status: ``syncing`` after a sync that already covers the threshold is success."""
    synced_after = sandbox.state.now().isoformat()
    sandbox.state.start_sync(DATA_SOURCE, outcome="synced")
    sandbox.state.advance(5)
    sandbox.state.start_sync(DATA_SOURCE, outcome="synced")  # settles the first sync into last_synced_at
    sandbox.state.set_timings(SLOW)  # the second one now runs for a long time
    sandbox.state.advance(SLOW.sync_pending + 1)
    assert sync_status(hook)["status"] == "syncing"

    event = only_event(
        DataSourceSyncTrigger(
            data_source_id=DATA_SOURCE, synced_after=synced_after, poll_interval=POLL, deadline=soon()
        )
    )

    assert (event["status"], event["resource"]["status"]) == ("success", "syncing")


def test_sync_trigger_keeps_polling_through_503s(
    sandbox: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced_after = sandbox.state.now().isoformat()
    sandbox.state.start_sync(DATA_SOURCE, outcome="synced")
    path = f"/v1/data-sources/{DATA_SOURCE}/sync"
    set_connection(monkeypatch, sandbox, max_retries=0)
    sandbox.state.inject(Fault.status(503, path=f"{path}$", times=3))
    event = only_event(
        DataSourceSyncTrigger(
            data_source_id=DATA_SOURCE, synced_after=synced_after, poll_interval=POLL, deadline=soon()
        )
    )
    assert event["status"] == "success"
    statuses = requests_to(sandbox, path)
    assert statuses[:3] == [503] * 3
    assert statuses[-1] == 200


def test_sync_trigger_reports_unknown_data_source_as_error(sandbox: SandboxServer) -> None:
    event = only_event(
        DataSourceSyncTrigger(
            data_source_id="ds_doesnotexist", synced_after="2026-11-21T10:00:00Z", poll_interval=POLL, deadline=soon()
        )
    )
    assert event["status"] == "error"
    assert event["resource"] is None
    assert "404" in event["message"]


# Pure outcomes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("queued", None),
        ("running", None),
        ("succeeded", "success"),
        ("failed", "failure"),
        ("cancelled", "failure"),
        ("paused", None),  # a status the contract does not know: keep waiting
        (None, None),
    ],
)
def test_execution_outcome(status: str | None, expected: str | None) -> None:
    assert execution_outcome({"status": status}) == expected


def test_execution_outcome_without_a_status_keeps_waiting() -> None:
    assert execution_outcome({}) is None


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("pending", None),
        ("generating", None),
        ("ready", "success"),
        ("failed", "failure"),
        ("expired", "failure"),
        ("archived", None),
        (None, None),
    ],
)
def test_report_outcome(status: str | None, expected: str | None) -> None:
    assert report_outcome({"status": status}) == expected


THRESHOLD = datetime(2026, 11, 21, 10, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("sync", "fail_on_sync_failure", "expected"),
    [
        pytest.param(
            {"status": "syncing", "last_synced_at": "2026-11-21T10:05:00Z", "last_attempt_at": "2026-11-21T10:06:00Z"},
            True,
            "success",
            id="syncing-but-fresh",
        ),
        pytest.param(
            {"status": "synced", "last_synced_at": "2026-11-21T09:59:59.999999Z", "last_attempt_at": None},
            True,
            None,
            id="synced-but-stale",
        ),
        pytest.param({"status": "synced", "last_synced_at": "2026-11-21T10:00:00Z"}, True, "success", id="exactly-at"),
        pytest.param(
            {"status": "synced", "last_synced_at": "2026-11-21T10:00:00.000001Z"},
            True,
            "success",
            id="one-microsecond-after",
        ),
        pytest.param(
            {"status": "synced", "last_synced_at": "2026-11-21T11:00:00+01:00"},
            True,
            "success",
            id="other-offset-same-instant",
        ),
        pytest.param(
            {"status": "synced", "last_synced_at": "2026-11-21T10:30:00+01:00"}, True, None, id="other-offset-earlier"
        ),
        pytest.param(
            {"status": "failed", "last_synced_at": "2026-11-20T10:00:00Z", "last_attempt_at": "2026-11-21T09:00:00Z"},
            True,
            None,
            id="failed-before-threshold",
        ),
        pytest.param(
            {"status": "failed", "last_synced_at": "2026-11-20T10:00:00Z", "last_attempt_at": "2026-11-21T10:00:00.5Z"},
            True,
            "failure",
            id="failed-after-threshold",
        ),
        pytest.param(
            {"status": "failed", "last_synced_at": "2026-11-20T10:00:00Z", "last_attempt_at": "2026-11-21T10:00:01Z"},
            False,
            None,
            id="failed-after-threshold-not-failing",
        ),
        pytest.param(
            {"status": "failed", "last_synced_at": "2026-11-21T10:01:00Z", "last_attempt_at": "2026-11-21T10:02:00Z"},
            True,
            "success",
            id="failed-retry-but-already-fresh",
        ),
        pytest.param(
            {"status": "failed", "last_synced_at": None, "last_attempt_at": None}, True, None, id="failed-no-times"
        ),
        pytest.param({"status": "never_synced", "last_synced_at": None}, True, None, id="never-synced"),
        pytest.param({"status": "pending", "last_synced_at": "not a time"}, True, None, id="garbage-time"),
        pytest.param(
            {"status": "synced", "last_synced_at": "2026-11-21T10:05:00"}, True, None, id="naive-time-ignored"
        ),
        pytest.param({}, True, None, id="empty"),
    ],
)
def test_sync_outcome(sync: dict[str, Any], fail_on_sync_failure: bool, expected: str | None) -> None:
    assert sync_outcome(sync, THRESHOLD, fail_on_sync_failure) == expected


def test_sync_outcome_with_fractional_seconds_on_both_sides() -> None:
    threshold = datetime(2026, 11, 21, 10, 0, 0, 123456, tzinfo=timezone.utc)
    assert sync_outcome({"status": "synced", "last_synced_at": "2026-11-21T10:00:00.123456Z"}, threshold) == "success"
    assert sync_outcome({"status": "synced", "last_synced_at": "2026-11-21T10:00:00.123455Z"}, threshold) is None
    failed = {"status": "failed", "last_synced_at": None, "last_attempt_at": "2026-11-21T10:00:00.123456Z"}
    assert sync_outcome(failed, threshold) == "failure"
    assert sync_outcome({**failed, "last_attempt_at": "2026-11-21T10:00:00.123455Z"}, threshold) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-11-21T10:00:00Z", datetime(2026, 11, 21, 10, tzinfo=timezone.utc)),
        ("2026-11-21T10:00:00.123456Z", datetime(2026, 11, 21, 10, 0, 0, 123456, tzinfo=timezone.utc)),
        ("2026-11-21T11:00:00+01:00", datetime(2026, 11, 21, 10, tzinfo=timezone.utc)),
        ("2026-11-21 10:00:00+00:00", datetime(2026, 11, 21, 10, tzinfo=timezone.utc)),  # str() of an aware datetime
        ("2026-11-21T10:00:00", None),
        ("", None),
        ("yesterday", None),
        (None, None),
        (1795000000, None),
        (datetime(2026, 11, 21, 10, tzinfo=timezone.utc), None),  # only text is parsed
    ],
)
def test_parse_time(value: object, expected: datetime | None) -> None:
    parsed = parse_time(value)
    assert parsed == expected
    if parsed is not None:
        assert parsed.utcoffset() is not None
        assert parsed - expected == timedelta(0)
