"""ExecuteWorkflowOperator through real Airflow runs, in worker-polling and deferrable modes."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_analytics.sandbox.config import Timings
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.airflow_runs import RunDag, task_output
from tests.support.names import WAIT_MODES, WORKFLOW


def execution_running_for(running: float) -> Timings:
    """Quick timings, but an execution stays running for ``running`` seconds."""
    return Timings(execution_queued=0.05, execution_running=running, report_pending=0.05, report_generating=0.2)


def executions_of(sandbox: SandboxServer, workflow_id: str = WORKFLOW) -> list[dict[str, Any]]:
    return [e for e in sandbox.state.executions() if e["workflow_id"] == workflow_id]


def start_keys(sandbox: SandboxServer) -> list[str]:
    """The Idempotency-Key of every start request.

    A retry that reattaches either sends no start (Airflow 3.3: the id is in ``task_state_store``) or
    repeats the first try's key, which the platform replays (before 3.3); a fresh start needs a new key.
    """
    return [r.headers["idempotency-key"] for r in sandbox.state.requests if r.path.endswith("/execute")]


@pytest.mark.parametrize("mode", WAIT_MODES)
def test_success_returns_outputs_for_downstream_tasks(run_dag: RunDag, sandbox: SandboxServer, mode: str) -> None:
    result = run_dag(f"test_workflow_{mode}", workflow_id=WORKFLOW, source="crm")
    assert result.states == {"run": "success", "use_outputs": "success"}
    [execution] = executions_of(sandbox)
    final = result.xcom("run")
    assert final["id"] == execution["id"]
    assert final["status"] == "succeeded"
    assert final["inputs"]["source"] == "crm"
    assert result.xcom("use_outputs") == final["outputs"]["rows_processed"]
    assert result.xcom("run", "execution_id") == execution["id"]
    link = result.xcom("run", "_link_ExecutionLink")
    assert link == f"{sandbox.base_url}/ui/workflows/{WORKFLOW}/executions/{execution['id']}"
    [start] = [r for r in sandbox.state.requests if r.path.endswith("/execute")]
    assert start.headers["idempotency-key"].startswith("apa-execution-")


@pytest.mark.parametrize("mode", WAIT_MODES)
def test_platform_failure_fails_the_task_with_the_platform_error(
    run_dag: RunDag, sandbox: SandboxServer, mode: str, capfd: pytest.CaptureFixture[str]
) -> None:
    result = run_dag(f"test_workflow_{mode}", workflow_id="wf_legacy_export")
    assert result.states["run"] == "failed"
    assert result.states["use_outputs"] == "upstream_failed"
    [execution] = executions_of(sandbox, "wf_legacy_export")
    assert execution["status"] == "failed"
    output = task_output(capfd.readouterr().out)
    assert f"execution {execution['id']} of workflow wf_legacy_export failed: " in output
    assert execution["error"]["type"] in output
    assert sandbox.token not in output


@pytest.mark.parametrize("mode", WAIT_MODES)
def test_timeout_cancels_the_execution_and_says_so(
    run_dag: RunDag, sandbox: SandboxServer, mode: str, capfd: pytest.CaptureFixture[str]
) -> None:
    sandbox.state.set_timings(execution_running_for(running=60))
    result = run_dag(f"test_workflow_timeout_{mode}", workflow_id=WORKFLOW)
    assert result.states["run"] == "failed"
    [execution] = executions_of(sandbox)
    assert execution["status"] == "cancelled"
    assert any(r.path.endswith(f"/executions/{execution['id']}/cancel") for r in sandbox.state.requests)
    assert "it was cancelled" in task_output(capfd.readouterr().out)


@pytest.mark.parametrize("mode", WAIT_MODES)
def test_retry_reattaches_to_the_running_execution(run_dag: RunDag, sandbox: SandboxServer, mode: str) -> None:
    # The first try gives up at 2 s; the execution ends at 3 s, inside the retry's own 2 s.
    sandbox.state.set_timings(execution_running_for(running=3.0))
    result = run_dag(f"test_workflow_reattach_{mode}", workflow_id=WORKFLOW)
    assert result.states["run"] == "success"
    assert result.tries["run"] == 2
    [execution] = executions_of(sandbox)
    assert result.xcom("run")["id"] == execution["id"]
    assert execution["status"] == "succeeded"
    assert len(set(start_keys(sandbox))) == 1


@pytest.mark.parametrize("mode", WAIT_MODES)
def test_retry_returns_an_execution_that_succeeded_meanwhile(
    run_dag: RunDag, sandbox: SandboxServer, mode: str
) -> None:
    sandbox.state.set_timings(execution_running_for(running=1.5))
    result = run_dag(f"test_workflow_reattach_late_{mode}", workflow_id=WORKFLOW)
    assert result.states["run"] == "success"
    assert result.tries["run"] == 2
    [execution] = executions_of(sandbox)
    assert result.xcom("run")["id"] == execution["id"]
    assert len(set(start_keys(sandbox))) == 1


@pytest.mark.parametrize("mode", WAIT_MODES)
def test_retry_after_a_failed_execution_starts_a_fresh_one(run_dag: RunDag, sandbox: SandboxServer, mode: str) -> None:
    sandbox.state.set_execution_outcome(WORKFLOW, "failed", "warehouse unavailable")
    result = run_dag(f"test_workflow_retry_after_failure_{mode}", workflow_id=WORKFLOW)
    assert result.states["run"] == "failed"
    assert result.tries["run"] == 2
    executions = executions_of(sandbox)
    assert len(executions) == 2
    assert {e["status"] for e in executions} == {"failed"}
    assert len(set(start_keys(sandbox))) == 2


@pytest.mark.parametrize("mode", WAIT_MODES)
def test_fire_and_forget_returns_the_queued_execution(run_dag: RunDag, sandbox: SandboxServer, mode: str) -> None:
    sandbox.state.set_timings(execution_running_for(running=60))
    result = run_dag(f"test_workflow_nowait_{mode}", workflow_id=WORKFLOW)
    assert result.states["run"] == "success"
    assert result.xcom("run")["status"] in ("queued", "running")
    assert len(executions_of(sandbox)) == 1


@pytest.mark.parametrize("mode", WAIT_MODES)
def test_execution_timeout_cancels_before_airflow_kills_the_task(
    run_dag: RunDag, sandbox: SandboxServer, mode: str, capfd: pytest.CaptureFixture[str]
) -> None:
    sandbox.state.set_timings(execution_running_for(running=60))
    result = run_dag(f"test_workflow_execution_timeout_{mode}", workflow_id=WORKFLOW)
    assert result.states["run"] == "failed"
    [execution] = executions_of(sandbox)
    assert execution["status"] == "cancelled"
    assert "it was cancelled" in task_output(capfd.readouterr().out)


@pytest.mark.parametrize("mode", WAIT_MODES)
def test_a_refused_request_fails_the_task_without_its_retries(
    run_dag: RunDag, sandbox: SandboxServer, capfd: pytest.CaptureFixture[str], mode: str
) -> None:
    result = run_dag(f"test_workflow_refused_{mode}", workflow_id="wf_missing")
    assert result.states["run"] == "failed"
    assert result.tries["run"] == 1
    assert [r.path for r in sandbox.state.requests if r.method == "POST"] == ["/v1/workflows/wf_missing/execute"]
    printed = task_output(capfd.readouterr().out)
    assert "Failing without using the task's 2 retries: the platform refused the request (404)" in printed
