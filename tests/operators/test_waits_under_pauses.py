"""Waits under the platform's rate limit that need no Airflow run (issue 44, finding 10; docs/operators.md,
"Waiting under the platform's rate limit"): an operator's wait on the worker, a deferrable sensor's first poke, a
trigger. ``tests/airflow/test_sensor_pauses.py`` runs the sensors' modes in real Airflow.

The pauses are scripted on the sandbox: a ``Retry-After`` on a 429, or an answer whose window is used up until an
``X-RateLimit-Reset``. The limit of each test (``pytest.mark.timeout``) is under the pause where waiting it out in
the worker would be the bug.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import TaskDeferred

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.errors import RemoteJobTimeout
from airflow_provider_analytics.operators.reports import DownloadReportOperator
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor
from airflow_provider_analytics.sensors.workflows import WorkflowExecutionSensor
from airflow_provider_analytics.triggers.executions import ExecutionTrigger
from airflow_provider_analytics.version_compat import reschedule_exception
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._accounts import reset_rate_limiters
from tests.support.airflow_runs import needs_airflow
from tests.support.context import SLOW, StubTaskInstance, make_context
from tests.support.names import DATA_SOURCE, POLL, WORKFLOW
from tests.support.redis_server import RedisServer
from tests.support.task_log import task_log
from tests.support.triggers import set_connection, triggerer_event

# The sandbox's own X-RateLimit headers are off: a window the limiter learnt from them would shorten the pause a
# scripted Reset asks for (wire/_throttle.py), and the tests need the pause they script.
pytestmark = [pytest.mark.timeout(25), pytest.mark.analytics_sandbox(rate_limit_headers=False)]
NAMED_PAUSE = re.compile(r"the platform's X-RateLimit-Reset asked this token to wait \d+ s \(until \d{4}-")
PAST_DEADLINE = "no request could be answered before the wait's deadline"


def used_up(seconds: int) -> Fault:
    """The next answer of any request: its window is used up until ``seconds`` from now."""
    reset = str(int(time.time()) + seconds)
    return Fault.headers(set={"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset})


def sent(sandbox: SandboxServer) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in sandbox.state.requests]


def test_an_operators_wait_on_the_worker_times_out_at_once_under_a_pause_past_its_deadline(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The start's answer uses up the window for 60 s; the wait's timeout is 5 s: no poll could be answered."""
    sandbox.state.set_timings(SLOW)
    sandbox.state.inject(used_up(60))
    operator = ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, poll_interval=POLL, timeout=5)
    with task_log(caplog) as lines, pytest.raises(RemoteJobTimeout) as caught:
        operator.execute(make_context())
    message = str(caught.value)
    assert message.startswith("gave up waiting for execution ex_")
    assert "before timeout=5 s ran out (last status: queued)" in message
    assert NAMED_PAUSE.search(message), message
    assert PAST_DEADLINE in message
    # Its cancel is held by the same pause: said, not hidden.
    assert "it was NOT cancelled" in message
    assert [level for level, line in lines if line.startswith("Could not cancel execution")] == ["warning"]
    assert sent(sandbox) == [("POST", f"/v1/workflows/{WORKFLOW}/execute")], "nothing sent into the pause"


def test_a_download_waiting_for_its_report_times_out_at_once_under_a_pause_past_its_deadline(
    sandbox: SandboxServer, hook: AnalyticsHook, tmp_path: Any
) -> None:
    sandbox.state.set_timings(SLOW)
    report = hook.generate_report(["db_sales"])
    sandbox.state.inject(used_up(60))  # on the first look at the report
    operator = DownloadReportOperator(
        task_id="download", report_id=report["id"], destination=f"{tmp_path}/", poll_interval=POLL, timeout=5
    )
    with pytest.raises(RemoteJobTimeout) as caught:
        operator.execute(make_context())
    assert NAMED_PAUSE.search(str(caught.value))
    assert PAST_DEADLINE in str(caught.value)
    assert [path for _, path in sent(sandbox)].count(f"/v1/reports/{report['id']}") == 1
    assert list(tmp_path.iterdir()) == []


SENSORS: list[Any] = [
    pytest.param(
        lambda hook: WorkflowExecutionSensor(
            task_id="sense",
            workflow_id=WORKFLOW,
            execution_id=hook.execute_workflow(WORKFLOW)["id"],
            poke_interval=POLL,
            timeout=60,
            deferrable=True,
        ),
        "/executions/",
        id="execution",
    ),
    pytest.param(
        lambda hook: DataSourceSyncedSensor(
            task_id="sense", data_source_id=DATA_SOURCE, poke_interval=POLL, timeout=60, deferrable=True
        ),
        "/sync",
        id="sync",
    ),
]


@pytest.mark.parametrize(("make", "polled"), SENSORS)
def test_a_deferrable_sensor_whose_first_poke_meets_a_retry_after_defers_at_once(
    sandbox: SandboxServer,
    hook: AnalyticsHook,
    caplog: pytest.LogCaptureFixture,
    make: Callable[[AnalyticsHook], Any],
    polled: str,
) -> None:
    """A 30 s ``Retry-After``, longer than the test may take: waiting it out on the worker would fail the test."""
    sandbox.state.set_timings(SLOW)
    sensor = make(hook)
    sandbox.state.inject(Fault.status(429, method="GET", path=polled, retry_after=30))
    context = make_context(data_interval_end=sandbox.state.now())
    with task_log(caplog) as lines, pytest.raises(TaskDeferred):
        sensor.execute(context)
    assert [(method, path) for method, path in sent(sandbox) if polled in path] == [("GET", sent(sandbox)[-1][1])]
    assert any("Retry-After asked this token to wait 30 s" in line and "deferring now" in line for _, line in lines)


@pytest.mark.parametrize("met", [False, True], ids=["pause in force", "pause its poll meets"])
def test_a_trigger_times_out_at_once_under_a_pause_past_its_deadline(
    sandbox: SandboxServer, hook: AnalyticsHook, caplog: pytest.LogCaptureFixture, met: bool
) -> None:
    """The triggerer's polls would be refused unsent until the deadline: the wait ends now, naming the header."""
    sandbox.state.set_timings(SLOW)
    execution = hook.execute_workflow(WORKFLOW)
    polled = f"/v1/workflows/{WORKFLOW}/executions/{execution['id']}"
    if met:  # the trigger's first poll is refused for 60 s
        sandbox.state.inject(Fault.status(429, path=f"{polled}$", retry_after=60))
    else:  # the token's window is used up, in this process, for 60 s
        sandbox.state.inject(used_up(60))
        hook.client.call(endpoints.list_charts())
    trigger = ExecutionTrigger(
        workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=time.time() + 8
    )
    with task_log(caplog) as lines:
        event = triggerer_event(trigger)
    assert event["status"] == "timeout"
    assert event["message"].startswith(f"gave up waiting for execution {execution['id']} of workflow {WORKFLOW}: ")
    header = "Retry-After" if met else "X-RateLimit-Reset"
    assert re.search(rf"the platform's {header} asked this token to wait \d+ s \(until \d{{4}}-", event["message"])
    assert PAST_DEADLINE in event["message"]
    assert [r.path for r in sandbox.state.requests].count(polled) == int(met), "no poll was sent into the pause"
    assert [level for level, line in lines if line == event["message"]] == ["warning"]


class FirstPokeNow(StubTaskInstance):
    """A task instance whose sensor in reschedule mode has its first poke now (Airflow 3 asks it)."""

    def get_first_reschedule_date(self, context: Any) -> datetime | None:
        return None


@needs_airflow("3.0", "a sensor in reschedule mode asks the task instance when it began")
def test_a_rescheduled_sensor_gives_its_slot_back_for_a_pause_another_process_learnt(
    monkeypatch: pytest.MonkeyPatch, sandbox: SandboxServer
) -> None:
    """With the connection's rate limit store, a sensor rescheduled into a new process learns the fleet's pause from
    it, with its first request's turn: rescheduled for the pause's end, not failed, nothing sent."""
    with RedisServer() as redis_server:
        set_connection(monkeypatch, sandbox, rate_limit_redis_conn_id="rate_limits")
        monkeypatch.setenv("AIRFLOW_CONN_RATE_LIMITS", f"redis://127.0.0.1:{redis_server.port}?db=0")
        with AnalyticsHook() as other_process:  # its answer uses up the token's window for 60 s
            sandbox.state.inject(used_up(60))
            other_process.call(endpoints.list_charts())
        reset_rate_limiters()  # this process knew it too: a rescheduled sensor starts in a new one
        seen = len(sandbox.state.requests)
        sensor = DataSourceSyncedSensor(task_id="sense", data_source_id=DATA_SOURCE, poke_interval=POLL, timeout=600)
        sensor.mode = "reschedule"
        with pytest.raises(reschedule_exception()) as rescheduled:
            sensor.execute(make_context(data_interval_end=sandbox.state.now(), ti=FirstPokeNow()))
    assert rescheduled.value.reschedule_date > datetime.now(UTC) + timedelta(seconds=30)  # type: ignore[attr-defined]
    assert len(sandbox.state.requests) == seen, "nothing was sent into the pause"
