"""A trigger's first poll keeps out of Airflow's deferral race: never sooner than ``FIRST_POLL_FLOOR_SECONDS``.

A wait that is already over when the task defers would otherwise fire within a second, while the deferring
worker's exit is still on its way to the scheduler (docs/troubleshooting.md). The times compared are the
sandbox's own: when it received the task's last look and the trigger's first poll; a slow machine can only
widen the gap, never narrow it.
"""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.triggers.base import FIRST_POLL_FLOOR_SECONDS
from airflow_provider_analytics.triggers.executions import ExecutionTrigger
from tests.support.context import INSTANT
from tests.support.names import WORKFLOW
from tests.support.triggers import execution_path, only_event


def _first_poll_gap(sandbox: SandboxServer, hook: AnalyticsHook, poll_interval: float, deadline_after: float) -> float:
    """Seconds between the task's last look at an execution that has ended and its trigger's first poll."""
    sandbox.state.set_timings(INSTANT)
    execution = hook.execute_workflow(WORKFLOW)
    hook.get_execution(WORKFLOW, execution["id"])  # the sensor's poke, right before it defers
    trigger = ExecutionTrigger(
        workflow_id=WORKFLOW,
        execution_id=execution["id"],
        poll_interval=poll_interval,
        deadline=time.time() + deadline_after,
    )

    assert only_event(trigger)["status"] == "success"

    path = execution_path(WORKFLOW, execution["id"])
    looks = [
        datetime.fromisoformat(r.received_at.replace("Z", "+00:00"))
        for r in sandbox.state.requests
        if r.method == "GET" and r.path == path
    ]
    assert len(looks) == 2, looks  # the task's look, then the trigger's one poll that saw the end
    return (looks[1] - looks[0]).total_seconds()


def test_a_wait_already_over_is_first_polled_no_sooner_than_the_floor(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    """The execution ended before the deferral, so only the floor holds the trigger back. A deadline just past
    the floor cuts the random part of the first wait short (the first poll is then its last look), so the test
    lasts about the floor, and the old first wait (a random part of one interval) always came sooner."""
    gap = _first_poll_gap(sandbox, hook, FIRST_POLL_FLOOR_SECONDS, FIRST_POLL_FLOOR_SECONDS + 0.3)
    assert gap >= FIRST_POLL_FLOOR_SECONDS, f"the trigger polled {gap:.2f} s after the task's look"


@pytest.mark.parametrize("poll_interval", [0.3])
def test_a_shorter_interval_than_the_floor_is_the_floor(
    sandbox: SandboxServer, hook: AnalyticsHook, poll_interval: float
) -> None:
    """Who asks for polls more often than the floor gets a first poll after one whole interval, not at once."""
    gap = _first_poll_gap(sandbox, hook, poll_interval, 60)
    assert gap >= poll_interval, f"the trigger polled {gap:.2f} s after the task's look"
