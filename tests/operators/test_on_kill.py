"""Killing a task that waits on the worker cancels the remote execution.

The task runs in the test's main thread, as Airflow runs ``execute`` in the task process's main thread
(Airflow 2.11's executor safeguard fails an ``execute`` called from any other thread); ``on_kill`` comes from
a second thread, as the kill signal's handler interrupts the waiting task in a deployment.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from airflow_provider_analytics.operators.errors import RemoteJobFailed
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.context import SLOW, make_context
from tests.support.names import WORKFLOW


@pytest.mark.parametrize("cancel_on_kill", [True, False])
def test_on_kill_cancels_the_execution_being_waited_for(sandbox: SandboxServer, cancel_on_kill: bool) -> None:
    sandbox.state.set_timings(SLOW)
    operator = ExecuteWorkflowOperator(
        task_id="run", workflow_id=WORKFLOW, poll_interval=0.1, timeout=30, cancel_on_kill=cancel_on_kill
    )
    seen: dict[str, Any] = {}
    finished = threading.Event()

    def kill() -> None:
        try:
            for _ in range(500):  # wait until the task is waiting: it has polled the execution at least once
                if any(r.method == "GET" and "/executions/" in r.path for r in sandbox.state.requests):
                    break
                time.sleep(0.02)
            seen["executions"] = sandbox.state.executions()
            seen["finished before the kill"] = finished.is_set()
            operator.on_kill()  # what Airflow calls when the task is killed or hits execution_timeout
            seen["cancels"] = [r.path for r in sandbox.state.requests if r.path.endswith("/cancel")]
            seen["status after the kill"] = sandbox.state.executions()[0]["status"]
        finally:
            if not cancel_on_kill:  # the execution finishes, and with it the task's wait
                sandbox.state.advance(3600)

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    try:
        if cancel_on_kill:
            with pytest.raises(RemoteJobFailed) as failed:
                operator.execute(make_context())
            assert "the task was killed; execution" in str(failed.value)
            assert "was cancelled" in str(failed.value)
        else:
            result = operator.execute(make_context())
            assert result["status"] == "succeeded"
    finally:
        finished.set()
        killer.join(timeout=10)
    assert not killer.is_alive(), "the killing thread must end before the test does"

    [started] = seen["executions"]
    assert seen["finished before the kill"] is False
    if cancel_on_kill:
        assert seen["cancels"] == [f"/v1/workflows/{WORKFLOW}/executions/{started['id']}/cancel"]
    else:
        assert seen["cancels"] == []
        assert seen["status after the kill"] in ("queued", "running")
