"""DataSourceSyncTrigger's poll loop: a sync after the threshold succeeds or fails it, stale data times out."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.triggers.data_sources import DataSourceSyncTrigger
from airflow_provider_analytics.wire._times import parse_time
from tests.support.context import SLOW
from tests.support.names import DATA_SOURCE, POLL
from tests.support.triggers import only_event, requests_to, set_connection, soon


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
        "message": f"data source {DATA_SOURCE} synced at {final['last_synced_at']}",
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
        "message": f"the sync of data source {DATA_SOURCE} failed at {final['last_attempt_at']}",
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
    # Two seconds, not a fifth: a deadline that near gives the one poll its last look of a second, which a busy
    # machine overran now and then (the event then had no resource to show: the flaky test of issue 45).
    event = only_event(
        DataSourceSyncTrigger(
            data_source_id=DATA_SOURCE, synced_after=synced_after, poll_interval=POLL, deadline=time.time() + 2
        )
    )
    assert event == {
        "status": "timeout",
        "kind": "sync",
        "target": {"data_source_id": DATA_SOURCE, "synced_after": synced_after, "fail_on_sync_failure": True},
        "resource": sync_status(hook),
        "message": f"gave up waiting for the sync of data source {DATA_SOURCE}",
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
