"""Killing a task that waits on the worker cancels the remote execution."""

from __future__ import annotations

import threading
import time

import pytest

from airflow_provider_analytics.operators.jobs import RemoteJobFailed
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from tests.support.context import SLOW, make_context
from tests.support.names import WORKFLOW


@pytest.mark.parametrize("cancel_on_kill", [True, False])
def test_on_kill_cancels_the_execution_being_waited_for(sandbox, cancel_on_kill):
    sandbox.state.set_timings(SLOW)
    operator = ExecuteWorkflowOperator(
        task_id="run", workflow_id=WORKFLOW, poll_interval=0.1, timeout=30, cancel_on_kill=cancel_on_kill
    )
    outcome: list[BaseException | object] = []

    def run() -> None:
        try:
            outcome.append(operator.execute(make_context()))
        except BaseException as exc:  # the test thread reports whatever the task raised
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    try:
        for _ in range(500):  # wait until the task is waiting: it has polled the execution at least once
            if any(r.method == "GET" and "/executions/" in r.path for r in sandbox.state.requests):
                break
            time.sleep(0.02)
        [started] = sandbox.state.executions()

        operator.on_kill()  # what Airflow calls when the task is killed or hits execution_timeout

        cancels = [r for r in sandbox.state.requests if r.path.endswith("/cancel")]
        if cancel_on_kill:
            assert [r.path for r in cancels] == [f"/v1/workflows/{WORKFLOW}/executions/{started['id']}/cancel"]
        else:
            assert cancels == []
            assert sandbox.state.executions()[0]["status"] in ("queued", "running")
            assert worker.is_alive(), "still waiting for the execution"
    finally:  # whatever failed above, the task's thread ends here: it must not poll the next test's sandbox
        worker.join(timeout=10 if cancel_on_kill else 0)
        if worker.is_alive():
            sandbox.state.advance(3600)  # the execution finishes, and with it the task's wait
            worker.join(timeout=10)
    assert not worker.is_alive(), "the task's thread must end before the test does"
    assert outcome, "the task did not finish"
    if cancel_on_kill:
        assert isinstance(outcome[0], RemoteJobFailed)
        assert "the task was killed; execution" in str(outcome[0])
        assert "was cancelled" in str(outcome[0])
    else:
        assert not isinstance(outcome[0], BaseException), outcome[0]
