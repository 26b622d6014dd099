"""What a wait logs, and at which level: a state change at INFO, a poll that saw none at DEBUG, one INFO line when a
task resumes from the triggerer (what it waited for, how that ended, how long; for a success, the only line that
says so), the rows a chart read returned.

The levels are read from the log records themselves (``tests/support/task_log.py``).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from airflow.providers.common.compat.sdk import TaskDeferred

from airflow_provider_analytics.operators.charts import GetChartDataOperator
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor
from airflow_provider_analytics.sensors.workflows import WorkflowExecutionSensor
from airflow_provider_analytics.triggers.executions import ExecutionTrigger
from tests.support.context import SLOW, make_context
from tests.support.names import DATA_SOURCE, POLL, WORKFLOW
from tests.support.task_log import LogLines, task_log
from tests.support.triggers import only_event, soon, triggerer_event

# Under SLOW timings every state lasts 600 s: this far on, all work is over.
PAST_THE_END = 1300.0
NEXT_CHECK = re.compile(r"; next check in [\d.]+ s$")


def polls(sandbox: SandboxServer, path_start: str) -> int:
    """Answered GETs of paths that start with ``path_start``."""
    return sum(1 for r in sandbox.state.requests if r.method == "GET" and r.path.startswith(path_start) and r.status)


@contextmanager
def moving_on_after_polls(sandbox: SandboxServer, path_start: str, steps: list[tuple[int, float]]) -> Iterator[None]:
    """From another thread: after each step's number of polls since the previous step, advance the sandbox clock.

    Counted in polls, not seconds, so a slow machine changes nothing: each state is seen by that many polls.
    """
    stop = threading.Event()

    def drive() -> None:
        for count, seconds in steps:
            wanted = polls(sandbox, path_start) + count
            while polls(sandbox, path_start) < wanted:
                if stop.wait(0.01):
                    return
            sandbox.state.advance(seconds)

    thread = threading.Thread(target=drive, name="moving-on-after-polls")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def checks(lines: LogLines) -> LogLines:
    return [(level, message) for level, message in lines if NEXT_CHECK.search(message)]


def states_then_levels(lines: LogLines) -> tuple[list[str], list[str]]:
    """The state each poll line names (its text before the interval), and the level it was logged at."""
    return [NEXT_CHECK.sub("", message) for _, message in lines], [level for level, _ in lines]


def assert_info_only_on_change(lines: LogLines) -> None:
    states, levels = states_then_levels(lines)
    for index, (state, level) in enumerate(zip(states, levels, strict=True)):
        changed = index == 0 or state != states[index - 1]
        assert level == ("info" if changed else "debug"), (index, state, level, lines)


def test_a_wait_on_the_worker_logs_each_state_once_at_info_and_repeats_at_debug(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    sandbox.state.set_timings(SLOW)
    executions = f"/v1/workflows/{WORKFLOW}/executions/"
    operator = ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, poll_interval=POLL)
    with task_log(caplog) as lines, moving_on_after_polls(sandbox, executions, [(3, 600.0), (3, PAST_THE_END)]):
        result = operator.execute(make_context())
    named = f"execution {result['id']} of workflow {WORKFLOW}"
    seen = checks(lines)
    assert len(seen) == polls(sandbox, executions)  # one line for each poll, whatever its level
    assert_info_only_on_change(seen)
    assert [message for level, message in seen if level == "info"] == [
        f"{named} is queued; next check in {POLL:g} s",
        f"{named} is running; next check in {POLL:g} s",
    ]
    assert [level for level, _ in seen].count("debug") >= 4  # three polls in each state: two repeats of each
    assert ("info", f"{named} succeeded") in lines


def test_a_trigger_logs_each_state_once_at_info_and_repeats_at_debug(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    sandbox.state.set_timings(SLOW)
    execution = ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, wait_for_completion=False).execute(
        make_context()
    )
    path = f"/v1/workflows/{WORKFLOW}/executions/{execution['id']}"
    trigger = ExecutionTrigger(
        workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=soon(60)
    )
    with task_log(caplog) as lines, moving_on_after_polls(sandbox, path, [(3, 600.0), (3, PAST_THE_END)]):
        event = only_event(trigger)
    named = f"execution {execution['id']} of workflow {WORKFLOW}"
    assert event["message"] == f"{named} succeeded"
    seen = checks(lines)
    assert len(seen) == polls(sandbox, path) - 1  # the last poll fires the event instead
    assert_info_only_on_change(seen)
    assert [message for level, message in seen if level == "info"] == [
        f"{named} is queued; next check in {POLL:g} s",
        f"{named} is running; next check in {POLL:g} s",
    ]


def test_an_operator_resumed_from_the_triggerer_says_what_it_waited_for_how_it_ended_and_how_long(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    sandbox.state.set_timings(SLOW)
    context = make_context()

    def operator() -> ExecuteWorkflowOperator:
        return ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, deferrable=True, poll_interval=POLL)

    with pytest.raises(TaskDeferred) as deferred:
        operator().execute(context)
    sandbox.state.advance(PAST_THE_END)
    event = triggerer_event(deferred.value.trigger)
    handed = json.loads(json.dumps(deferred.value.kwargs))  # as Airflow stores it between the two processes
    with task_log(caplog) as lines:
        result = operator().execute_complete(context, event=event, **handed)
    named = f"execution {result['id']} of workflow {WORKFLOW}"
    [resumed] = [(level, message) for level, message in lines if message.startswith("Resumed")]
    assert re.fullmatch(
        rf"Resumed from the triggerer after \d+\.\d s waiting for {named}: success \({named} succeeded\)", resumed[1]
    ), resumed
    assert resumed[0] == "info"
    # The one line of a successful wait: no second line saying it succeeded.
    assert [message for _, message in lines if named in message] == [resumed[1]]


def test_a_workflow_execution_sensor_resumed_with_success_logs_one_line(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    execution = ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, wait_for_completion=False).execute(
        make_context()
    )
    context = make_context()

    def sensor() -> WorkflowExecutionSensor:
        return WorkflowExecutionSensor(
            task_id="s", workflow_id=WORKFLOW, execution_id=execution["id"], deferrable=True, poke_interval=POLL
        )

    with pytest.raises(TaskDeferred) as deferred:
        sensor().execute(context)
    sandbox.state.advance(PAST_THE_END)
    event = triggerer_event(deferred.value.trigger)
    handed = json.loads(json.dumps(deferred.value.kwargs))
    with task_log(caplog) as lines:
        sensor().execute_complete(context, event=event, **handed)
    named = f"execution {execution['id']} of workflow {WORKFLOW}"
    [line] = [(level, message) for level, message in lines if named in message]
    assert line[0] == "info"
    assert line[1].startswith("Resumed from the triggerer after "), line


def test_a_resume_without_the_deferral_handed_over_still_says_what_it_waited_for(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    # A task deferred by an earlier release of this provider resumes with no ``deferral``: no duration then.
    started = ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, wait_for_completion=False)
    execution = started.execute(make_context())
    sandbox.state.advance(PAST_THE_END)
    trigger = ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=soon())
    event = triggerer_event(trigger)
    with task_log(caplog) as lines:
        ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW).execute_complete(make_context(), event)
    named = f"execution {execution['id']} of workflow {WORKFLOW}"
    assert ("info", f"Resumed from the triggerer waiting for {named}: success ({named} succeeded)") in lines


def test_a_sensor_logs_a_poke_at_info_only_when_the_state_changed(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    # Seeded sources read "synced" but last synced a day ago: stale for a threshold of now.
    threshold = sandbox.state.now()
    sensor = DataSourceSyncedSensor(
        task_id="fresh", data_source_id=DATA_SOURCE, synced_after=threshold, poke_interval=5
    )
    context = make_context()
    try:
        with task_log(caplog) as lines:
            assert [sensor.poke(context) for _ in range(3)] == [False, False, False]
    finally:
        sensor.hook.close()  # poke() is called directly here, without execute's step that closes it
    seen = checks(lines)
    assert [level for level, _ in seen] == ["info", "debug", "debug"]
    assert re.fullmatch(
        rf"data source {DATA_SOURCE} last synced at \S+, before {re.escape(threshold.isoformat())}; next check in 5 s",
        seen[0][1],
    ), seen


def test_a_sensor_resumed_from_the_triggerer_says_what_it_waited_for_how_it_ended_and_how_long(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    threshold = sandbox.state.now()
    context = make_context()

    def sensor() -> DataSourceSyncedSensor:
        return DataSourceSyncedSensor(
            task_id="fresh", data_source_id=DATA_SOURCE, synced_after=threshold, deferrable=True, poke_interval=POLL
        )

    with pytest.raises(TaskDeferred) as deferred:
        sensor().execute(context)
    sandbox.state.start_sync(DATA_SOURCE, outcome="synced")
    event = triggerer_event(deferred.value.trigger)
    handed = json.loads(json.dumps(deferred.value.kwargs))
    with task_log(caplog) as lines:
        status = sensor().execute_complete(context, event=event, **handed)
    [resumed] = [(level, message) for level, message in lines if message.startswith("Resumed")]
    assert re.fullmatch(
        rf"Resumed from the triggerer after \d+\.\d s waiting for the sync of data source {DATA_SOURCE}: success "
        rf"\(data source {DATA_SOURCE} synced at {re.escape(status['last_synced_at'])}\)",
        resumed[1],
    ), resumed
    assert resumed[0] == "info"


def test_chart_data_returned_through_xcom_logs_its_row_count(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    with task_log(caplog) as lines:
        result = GetChartDataOperator(task_id="t", chart_id="ch_revenue").execute(make_context())
    expected = (
        f"Read {len(result['rows'])} rows of chart ch_revenue ({len(result['columns'])} columns), returned through XCom"
    )
    assert ("info", expected) in lines
    assert result["rows"]
