"""The waits' and downloads' metrics, read from a real StatsD listener: a trigger's wait in flight and the work's
time to its final state, and the bytes of a report's download."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.sensors.workflows import WorkflowExecutionSensor
from airflow_provider_analytics.triggers.executions import ExecutionTrigger
from airflow_provider_analytics.wire._times import parse_time
from tests.support.context import every_state_lasting, make_context
from tests.support.metrics import StatsdListener, named
from tests.support.names import POLL, WORKFLOW
from tests.support.reports import ready_report
from tests.support.triggers import only_event, soon


def test_a_trigger_counts_its_wait_in_flight_and_times_the_work_to_its_end(
    sandbox: SandboxServer, hook: AnalyticsHook, statsd: StatsdListener
) -> None:
    execution = hook.execute_workflow(WORKFLOW, {"day": "2026-11-20"})
    statsd.read()  # the start's own request metrics: not this test's subject
    trigger = ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=soon())

    event = only_event(trigger)

    metrics = statsd.read()
    in_flight = named(metrics, "analytics_platform.waits_in_flight", kind="execution")
    assert [(m.type, m.value) for m in in_flight] == [("g", 1), ("g", 0)]
    final = event["resource"]
    started, ended = parse_time(final["created_at"]), parse_time(final["finished_at"])
    assert started is not None
    assert ended is not None
    durations = named(metrics, "analytics_platform.work_duration", kind="execution", outcome="success")
    assert [m.type for m in durations] == ["ms"]
    assert durations[0].value == pytest.approx((ended - started).total_seconds() * 1000, abs=1)
    # The trigger's polls go through the async hook's client: counted under the route, never the ids.
    polls = named(metrics, "analytics_platform.requests", conn_id="analytics_default", method="GET")
    assert {m.tags["route"] for m in polls} == {"/v1/workflows/WORKFLOW_ID/executions/EXECUTION_ID"}


def test_a_wait_on_the_worker_counts_in_the_workers_process(sandbox: SandboxServer, statsd: StatsdListener) -> None:
    sandbox.state.set_timings(every_state_lasting(0.2))
    operator = ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, deferrable=False, poll_interval=POLL)

    execution = operator.execute(make_context())

    metrics = statsd.read()
    assert execution["status"] == "succeeded"
    in_flight = named(metrics, "analytics_platform.waits_in_flight", kind="execution")
    assert [m.value for m in in_flight] == [1, 0]
    assert len(named(metrics, "analytics_platform.work_duration", kind="execution", outcome="success")) == 1


def test_a_sensors_poke_that_sees_the_end_times_the_work(
    sandbox: SandboxServer, hook: AnalyticsHook, statsd: StatsdListener
) -> None:
    sandbox.state.set_timings(every_state_lasting(0.2))
    execution = hook.execute_workflow(WORKFLOW)
    sensor = WorkflowExecutionSensor(
        task_id="sense", workflow_id=WORKFLOW, execution_id=execution["id"], poke_interval=POLL, timeout=60
    )
    statsd.read()

    final = sensor.execute(make_context())

    metrics = statsd.read()
    assert final["status"] == "succeeded"
    assert len(named(metrics, "analytics_platform.work_duration", kind="execution", outcome="success")) == 1
    # Between pokes Airflow's own loop waits: a sensor in poke mode is no wait in flight (docs/metrics.md).
    assert named(metrics, "analytics_platform.waits_in_flight") == []


def test_a_download_counts_its_bytes(
    sandbox: SandboxServer, hook: AnalyticsHook, statsd: StatsdListener, tmp_path: Path
) -> None:
    report = ready_report(hook, sandbox)
    statsd.read()

    result = hook.download_report(report["id"], tmp_path / "report.pdf")

    downloaded = named(statsd.read(), "analytics_platform.downloaded_bytes", conn_id="analytics_default")
    assert [m.type for m in downloaded] == ["c"]
    assert sum(m.value for m in downloaded) == result.size > 0
