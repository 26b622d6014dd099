"""Both sensors under the platform's rate limit, through real Airflow runs in poke, reschedule and deferrable modes
(issue 44, finding 10; docs/operators.md, "Waiting under the platform's rate limit").

- A ``Retry-After`` that a poke meets: in reschedule mode the sensor gives its slot back and Airflow reschedules it
  for the pause's end; deferrable, it defers at once; in poke mode the poke waits it through (the slot is held
  anyway). The sensor succeeds in every mode.
- A window used up until an ``X-RateLimit-Reset`` past the sensor's timeout: the sensor ends as a timeout at once,
  naming the header, so ``soft_fail`` skips it (it failed with ``RateLimitedError`` before).
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.config import Timings
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.airflow_runs import SENSOR_MODES, RunDag, task_output
from tests.support.names import WORKFLOW

# The sandbox's own X-RateLimit headers are off: a window the limiter learnt from them would shorten the pause a
# scripted Reset asks for (wire/_throttle.py), and the tests need the pause they script.
pytestmark = pytest.mark.analytics_sandbox(rate_limit_headers=False)
RETRY_AFTER = 3
SENSORS = ["sync", "execution"]
# The timeout's reason, as the task log and the failure give it.
PAUSE_PAST_DEADLINE = "no request could be answered before the wait's deadline"


def sync_gate(sandbox: SandboxServer) -> tuple[dict[str, Any], str]:
    """A sync that completes at once after ``synced_after``: the run's conf and the path the sensor polls."""
    source = sandbox.state.data_sources()[0]["id"]
    threshold = (sandbox.state.now() - timedelta(seconds=1)).isoformat()
    sandbox.state.start_sync(source)
    return {"data_source_id": source, "synced_after": threshold}, f"/v1/data-sources/{source}/sync$"


def running_execution(hook: AnalyticsHook) -> tuple[dict[str, Any], str]:
    """An execution that succeeds about a second from now: the run's conf and the path the sensor polls."""
    execution = hook.execute_workflow(WORKFLOW)
    return {"workflow_id": WORKFLOW, "execution_id": execution["id"]}, f"/executions/{execution['id']}$"


def polls(sandbox: SandboxServer, path: str) -> list[Any]:
    return [r for r in sandbox.state.requests if r.method == "GET" and r.path.endswith(path.rstrip("$"))]


@pytest.mark.parametrize("mode", SENSOR_MODES)
@pytest.mark.parametrize("sensor", SENSORS)
def test_a_retry_after_that_a_poke_meets_holds_no_slot_it_need_not(
    run_dag: RunDag,
    sandbox: SandboxServer,
    hook: AnalyticsHook,
    capfd: pytest.CaptureFixture[str],
    sensor: str,
    mode: str,
) -> None:
    sandbox.state.set_timings(Timings(sync_pending=0, sync_running=0, execution_queued=0.2, execution_running=0.5))
    conf, path = sync_gate(sandbox) if sensor == "sync" else running_execution(hook)
    sandbox.state.inject(Fault.status(429, method="GET", path=path, retry_after=RETRY_AFTER))

    result = run_dag(f"test_paused_{sensor}_{mode}", **conf)

    assert result.states == {"wait": "success"}
    refused, *answered = polls(sandbox, path)
    assert refused.status == 429
    assert answered, "polled again after the pause"
    output = task_output(capfd.readouterr().out)
    if mode == "reschedule":  # gave its slot back, to come again when the pause ends; not in its poke_interval
        (rescheduled_for,) = result.reschedules["wait"]
        refused_at = datetime.fromisoformat(refused.received_at.replace("Z", "+00:00"))
        assert rescheduled_for >= refused_at + timedelta(seconds=RETRY_AFTER)
        assert f"Retry-After asked this token to wait {RETRY_AFTER} s" in output
    else:
        assert result.reschedules == {}
    if mode == "defer":  # deferred at once; the triggerer waited for the pause, not the worker
        assert "deferring now; the triggerer waits for it" in output


@pytest.mark.parametrize("mode", SENSOR_MODES)
@pytest.mark.parametrize(("suffix", "expected"), [("", "failed"), ("_soft", "skipped")])
@pytest.mark.parametrize("sensor", SENSORS)
def test_a_pause_past_the_timeout_ends_the_sensor_as_a_timeout(
    run_dag: RunDag,
    sandbox: SandboxServer,
    hook: AnalyticsHook,
    capfd: pytest.CaptureFixture[str],
    sensor: str,
    suffix: str,
    expected: str,
    mode: str,
) -> None:
    """The first poke's answer uses up the window until 6 s from now, past the sensor's timeout of 3 s."""
    if sensor == "sync":  # seeded sources last synced a day ago: the gate holds
        source = sandbox.state.data_sources()[0]["id"]
        conf = {"data_source_id": source, "synced_after": (sandbox.state.now() - timedelta(seconds=1)).isoformat()}
        dag_id, path = f"test_sync_{mode}{suffix}", f"/v1/data-sources/{source}/sync$"
    else:
        sandbox.state.set_timings(Timings(execution_queued=600))
        conf, path = running_execution(hook)
        dag_id = f"test_paused_execution_{mode}_short{suffix}"
    reset = {"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()) + 6)}
    sandbox.state.inject(Fault.headers(set=reset, method="GET", path=path))

    result = run_dag(dag_id, **conf)

    assert list(result.states.values()) == [expected]
    output = task_output(capfd.readouterr().out)
    assert "X-RateLimit-Reset asked this token to wait" in output
    assert PAUSE_PAST_DEADLINE in output
    assert len(polls(sandbox, path)) == 1, "no poke was sent into the pause"
    assert sandbox.token not in output
