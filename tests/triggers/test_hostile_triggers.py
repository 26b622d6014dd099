"""Triggers against a hostile or broken platform: they end in an event, on time, without flooding it."""

from __future__ import annotations

import json

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.triggers.data_sources import DataSourceSyncTrigger
from airflow_provider_analytics.triggers.executions import ExecutionTrigger
from airflow_provider_analytics.triggers.reports import ReportTrigger
from airflow_provider_analytics.wire._contract import MIN_POLL_INTERVAL
from tests.support.context import SLOW
from tests.support.names import DATA_SOURCE, JSON_HEADERS, WORKFLOW
from tests.support.triggers import execution_path, only_event, requests_to, set_connection, soon


@pytest.mark.parametrize("interval", [0, -5, 0.001])
def test_a_tiny_poll_interval_is_raised_to_the_floor(
    sandbox: SandboxServer, hook: AnalyticsHook, interval: float
) -> None:
    sandbox.state.set_timings(SLOW)
    execution = hook.execute_workflow(WORKFLOW)
    trigger = ExecutionTrigger(
        workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=interval, deadline=soon(1.0)
    )
    assert trigger.poll_interval == MIN_POLL_INTERVAL
    assert trigger.serialize()[1]["poll_interval"] == MIN_POLL_INTERVAL
    assert only_event(trigger)["status"] == "timeout"
    polls = requests_to(sandbox, execution_path(WORKFLOW, execution["id"]))
    assert 2 <= len(polls) <= 1.0 / MIN_POLL_INTERVAL + 3  # was hundreds a second with 0


def test_a_trickling_platform_cannot_hold_a_trigger_past_its_deadline(
    sandbox: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    execution = hook.execute_workflow(WORKFLOW)
    # An attempt may take 60 s, longer than the whole trickle: only the trigger's own deadline can end a poll.
    set_connection(monkeypatch, sandbox, timeout=60, max_retries=2)
    trickle = Fault.stream(
        200, headers=JSON_HEADERS, prefix=b'{"id": "', chunk=b"x", chunk_count=60, interval=0.5, suffix=b'"}', times=20
    )
    sandbox.state.inject(trickle)
    event = only_event(
        ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=0.5, deadline=soon(2.0))
    )
    # A poll held past the deadline would have read the whole trickled body after 30 s, which has no status:
    # an "error" event. A "timeout" with no state read shows the deadline cut the poll short.
    assert (event["status"], event["resource"]) == ("timeout", None)


@pytest.mark.parametrize(
    "body",
    [
        '{"id": "ex_1", "status": "failed", "error": 42}',
        '{"id": "ex_1", "status": ["running"]}',
        "[" * 100_000 + "]" * 100_000,
        "<html>maintenance</html>",
    ],
)
def test_a_malformed_execution_is_an_error_event_not_a_crash(
    sandbox: SandboxServer, hook: AnalyticsHook, body: str
) -> None:
    execution = hook.execute_workflow(WORKFLOW)
    path = execution_path(WORKFLOW, execution["id"])
    sandbox.state.inject(Fault.respond(200, headers={**JSON_HEADERS, "X-Request-Id": "req_bad"}, body=body, path=path))
    event = only_event(ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=0.1))
    assert event["status"] == "error"
    assert "req_bad" in event["message"]


def test_an_oversized_report_answer_is_an_error_event(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    report = hook.generate_report(["db_sales"], "pdf")
    huge = Fault.stream(
        200, headers=JSON_HEADERS, prefix=b'{"id": "', chunk=b"x" * 65536, chunk_count=200, suffix=b'"}'
    )
    sandbox.state.inject(huge)
    event = only_event(ReportTrigger(report_id=report["id"], poll_interval=0.1, deadline=soon(30)))
    assert event["status"] == "error"
    assert "max_response_bytes" in event["message"]


def test_a_sync_status_with_an_odd_error_is_an_error_event(sandbox: SandboxServer) -> None:
    body = {"data_source_id": DATA_SOURCE, "status": "failed", "error": ["disk", "full"]}
    sandbox.state.inject(Fault.respond(200, headers=JSON_HEADERS, body=json.dumps(body), path="/sync$"))
    trigger = DataSourceSyncTrigger(
        data_source_id=DATA_SOURCE, synced_after="2026-01-01T00:00:00Z", poll_interval=0.1, deadline=soon(10)
    )
    assert only_event(trigger)["status"] == "error"
