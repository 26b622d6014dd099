"""A token rotated while a task waits on the worker (or a sensor pokes): it reads its connection once more.

Found by ``make soak``: the triggers re-read their connection on a 401, but a wait held on the worker kept the
token it started with, so a rotation with a short grace period failed the try (the retry then reattached).
"""

from __future__ import annotations

import os
import threading
import time
from datetime import timedelta

import pytest

from airflow_provider_analytics.operators.errors import RemoteWaitError
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor
from airflow_provider_analytics.wire.errors import UnauthenticatedError
from tests.support.context import every_state_lasting, make_context
from tests.support.names import CONN_ENV, DATA_SOURCE, POLL, WORKFLOW
from tests.support.triggers import requests_to, set_connection


def rotate_once_polled(sandbox: SandboxServer, connection_too: bool) -> threading.Thread:
    """Once the task polls its execution, rotate the token with no grace (and, unless told not to, the connection)."""

    def rotate() -> None:
        deadline = time.monotonic() + 20
        while not any(r.method == "GET" and "/executions/" in r.path for r in sandbox.state.requests):
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)
        new, _ = sandbox.state.tokens.rotate(sandbox.token, 0, sandbox.state.now())
        if connection_too:
            os.environ[CONN_ENV] = sandbox.connection_json(token=new)

    thread = threading.Thread(target=rotate, name="rotate-token")
    thread.start()
    return thread


def run_on_the_worker(sandbox: SandboxServer, connection_too: bool) -> dict[str, object]:
    sandbox.state.set_timings(every_state_lasting(2))
    operator = ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, deferrable=False, poll_interval=POLL)
    rotation = rotate_once_polled(sandbox, connection_too)
    try:
        return dict(operator.execute(make_context()))
    finally:
        rotation.join()


def test_a_wait_on_the_worker_picks_up_a_rotated_token(sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(monkeypatch, sandbox)

    execution = run_on_the_worker(sandbox, connection_too=True)

    assert execution["status"] == "succeeded"
    polls = requests_to(sandbox, f"/v1/workflows/{WORKFLOW}/executions/{execution['id']}")
    assert polls.count(401) == 1  # the old token, refused once; then the connection as it reads now
    assert polls[-1] == 200
    assert len(sandbox.state.executions()) == 1


def test_a_token_refused_again_after_the_reread_fails_the_task(
    sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_connection(monkeypatch, sandbox)

    with pytest.raises(RemoteWaitError) as raised:
        run_on_the_worker(sandbox, connection_too=False)  # the secret store still holds the retired token

    assert (raised.value.status, raised.value.error_type) == (401, "unauthenticated")
    assert isinstance(raised.value.__cause__, UnauthenticatedError)


def test_a_sensor_poke_picks_up_a_rotated_token(sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sensor reads through the operators' path: a token rotated between two pokes is read again."""
    set_connection(monkeypatch, sandbox)
    sensor = DataSourceSyncedSensor(
        task_id="fresh", data_source_id=DATA_SOURCE, synced_after=sandbox.state.now() + timedelta(days=1)
    )
    context = make_context()
    assert sensor.poke(context) is False  # stale: the data must be fresh from tomorrow
    new, _ = sandbox.state.tokens.rotate(sandbox.token, 0, sandbox.state.now())
    os.environ[CONN_ENV] = sandbox.connection_json(token=new)

    assert sensor.poke(context) is False

    assert requests_to(sandbox, f"/v1/data-sources/{DATA_SOURCE}/sync") == [200, 401, 200]
    sensor.hook.close()
