"""Every call of a task ends by the task's deadline, also while the platform's rate limit pauses its token.

One answer with ``X-RateLimit-Remaining: 0`` and a ``Reset`` a day ahead pauses the token in this process (for
``max_retry_after``, 120 s, at most). A sensor's poke, a name lookup, a start and the connection test have a
shorter deadline than that: each fails at once, naming the header, instead of waiting (a sensor as a timeout, which
``soft_fail`` skips; a call as ``RateLimitedError``). The limit of each test (``pytest.mark.timeout``) is far under
the pause: only the deadline can end it in time.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import AirflowSensorTimeout

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.reports import DownloadReportOperator
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.sensors.workflows import WorkflowExecutionSensor
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire.errors import RateLimitedError
from tests.support.airflow_runs import needs_airflow
from tests.support.context import StubTaskInstance, make_context
from tests.support.names import POLL, WORKFLOW
from tests.support.reports import ready_report

WORKFLOW_NAME = "nightly-enrichment"  # WORKFLOW's name in the seed
NAMED_PAUSE = re.compile(r"X-RateLimit-Reset asked this token to wait \d+ s \(until \d{4}-")
pytestmark = pytest.mark.timeout(30)


def used_up_for_a_day() -> dict[str, str]:
    """A successful answer's headers: the token's window is used up and resets in 86,000 s."""
    reset = str(int(time.time()) + 86_000)
    return {"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}


def pause_the_token(sandbox: SandboxServer, hook: AnalyticsHook) -> int:
    """One successful answer pauses the token for a day (120 s held); the requests the sandbox saw so far."""
    sandbox.state.inject(Fault.headers(set=used_up_for_a_day(), path="/v1/charts$"))
    hook.client.call(endpoints.list_charts())
    return len(sandbox.state.requests)


def refused_by_its_deadline(caught: pytest.ExceptionInfo[RateLimitedError]) -> None:
    text = str(caught.value)
    assert NAMED_PAUSE.search(text), text
    assert "after this call's deadline" in text


def timed_out_for_the_pause(caught: pytest.ExceptionInfo[AirflowSensorTimeout], limit: str) -> None:
    text = str(caught.value)
    assert NAMED_PAUSE.search(text), text
    assert f"before {limit} ran out" in text
    assert "no request could be answered before the wait's deadline" in text


def execution(hook: AnalyticsHook) -> dict[str, Any]:
    return dict(hook.execute_workflow(WORKFLOW))


def test_a_poking_sensor_ends_by_its_timeout_while_the_token_is_paused(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    running = execution(hook)
    seen = pause_the_token(sandbox, hook)
    sensor = WorkflowExecutionSensor(
        task_id="sense", workflow_id=WORKFLOW, execution_id=running["id"], poke_interval=POLL, timeout=3, mode="poke"
    )
    with pytest.raises(AirflowSensorTimeout) as caught:  # a timeout, which soft_fail skips (issue 44)
        sensor.execute(make_context())
    timed_out_for_the_pause(caught, "timeout=3 s")
    assert len(sandbox.state.requests) == seen, "no poke was sent during the pause"


class RescheduledTaskInstance(StubTaskInstance):
    """A task instance that knows when its sensor was first rescheduled, as Airflow 3's does."""

    def __init__(self, first_reschedule: datetime) -> None:
        super().__init__()
        self.first_reschedule = first_reschedule

    def get_first_reschedule_date(self, context: Any) -> datetime:
        return self.first_reschedule


@needs_airflow("3.0", "a sensor in reschedule mode asks the task instance when it began")
def test_a_rescheduled_poke_ends_by_the_timeout_counted_from_the_first_poke(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    running = execution(hook)
    seen = pause_the_token(sandbox, hook)
    sensor = WorkflowExecutionSensor(
        task_id="sense", workflow_id=WORKFLOW, execution_id=running["id"], poke_interval=POLL, timeout=60
    )
    sensor.mode = "reschedule"
    began = datetime.now(UTC) - timedelta(seconds=57)  # 3 s of its 60 left
    with pytest.raises(AirflowSensorTimeout) as caught:
        sensor.execute(make_context(ti=RescheduledTaskInstance(began)))
    timed_out_for_the_pause(caught, "timeout=60 s")
    assert len(sandbox.state.requests) == seen


def test_a_name_lookup_ends_by_the_operators_timeout(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    seen = pause_the_token(sandbox, hook)
    operator = ExecuteWorkflowOperator(task_id="task", workflow_name=WORKFLOW_NAME, timeout=5)
    with pytest.raises(RateLimitedError) as caught:
        operator.execute(make_context())
    refused_by_its_deadline(caught)
    assert "GET /v1/workflows" in str(caught.value)
    assert len(sandbox.state.requests) == seen


@pytest.mark.parametrize(
    "limit", [{"timeout": 5}, {"execution_timeout": timedelta(seconds=30)}], ids=["timeout", "execution_timeout"]
)
def test_a_start_ends_by_the_tasks_deadline(sandbox: SandboxServer, hook: AnalyticsHook, limit: dict[str, Any]) -> None:
    seen = pause_the_token(sandbox, hook)
    operator = ExecuteWorkflowOperator(task_id="task", workflow_id=WORKFLOW, **limit)
    with pytest.raises(RateLimitedError) as caught:
        operator.execute(make_context())
    refused_by_its_deadline(caught)
    assert f"POST /v1/workflows/{WORKFLOW}/execute" in str(caught.value)
    assert len(sandbox.state.requests) == seen, "nothing was started"


def test_the_connection_test_answers_within_the_connections_timeout(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    seen = pause_the_token(sandbox, hook)
    ok, message = hook.test_connection()
    assert not ok
    assert NAMED_PAUSE.search(message), message
    assert len(sandbox.state.requests) == seen


def test_a_download_ends_by_the_operators_timeout(sandbox: SandboxServer, hook: AnalyticsHook, tmp_path: Any) -> None:
    """The readiness check itself pauses the token: only the download is left to meet the pause."""
    report = ready_report(hook, sandbox)
    sandbox.state.inject(Fault.headers(set=used_up_for_a_day(), path=f"/v1/reports/{report['id']}$"))
    operator = DownloadReportOperator(task_id="download", report_id=report["id"], destination=f"{tmp_path}/", timeout=5)
    with pytest.raises(RateLimitedError) as caught:
        operator.execute(make_context())
    refused_by_its_deadline(caught)
    assert "/download" in str(caught.value)
    assert not [r for r in sandbox.state.requests if r.path.endswith("/download")], "nothing was downloaded"
    assert list(tmp_path.iterdir()) == []
