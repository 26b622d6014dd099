"""An extra link the task never pushed costs no ERROR line: real ``dag.test()`` runs of ``ExecuteWorkflowOperator``.

Airflow 3 asks every operator link for its URL once more as the task ends (``finalize`` in the task runner), in
the task's own process, and stores the answer. A link that read its XCom there while nothing was pushed made
the task's supervisor log ``XCom not found ... _link_ExecutionLink`` at ERROR: a task that failed before it
started its work, and every task on a connection without ``ui_url``. The operator answers from what it pushed
instead (carried across a deferral). Airflow 2.11 never asks in the task; the runs are the same there.

These runs need Airflow's metadata database, migrated once for the module (as ``tests/airflow`` does).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import AirflowException, TaskDeferred

from airflow_provider_analytics.operators.links import ExecutionLink
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.airflow_runs import RUN_ENV, RunResult, load_dagbag, migrate_db, run_dag_test, task_output
from tests.support.context import SLOW, make_context
from tests.support.names import CONN_ENV, POLL, WAIT_MODES, WORKFLOW
from tests.support.triggers import triggerer_event

NOT_FOUND = "XCom not found"


@pytest.fixture(scope="module")
def dagbag() -> Iterator[Any]:
    """The test DAGs (``tests/dags``), on the session's AIRFLOW_HOME migrated for these runs."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in RUN_ENV.items():
            patch.setenv(name, value)
        migrate_db()
        bag = load_dagbag(os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
        assert not bag.import_errors, bag.import_errors
        yield bag


def run(dagbag: Any, dag_id: str, **conf: Any) -> RunResult:
    return RunResult.of(run_dag_test(dagbag.get_dag(dag_id), conf))


@pytest.mark.parametrize("mode", WAIT_MODES)
def test_a_task_that_failed_before_starting_its_work_logs_no_missing_xcom(
    dagbag: Any, sandbox: SandboxServer, mode: str, capfd: pytest.CaptureFixture[str]
) -> None:
    result = run(dagbag, f"test_workflow_{mode}", workflow_id="wf_does_not_exist")
    assert result.states["run"] == "failed"
    output = task_output(capfd.readouterr().out)
    assert "wf_does_not_exist" in output  # the run's output was captured: the 404 is in it
    assert NOT_FOUND not in output
    assert not result.xcom("run", "_link_ExecutionLink")  # "" (Airflow 3 stores the answer) or no row (2.11)


@pytest.mark.parametrize("mode", WAIT_MODES)
def test_a_connection_without_ui_url_logs_no_missing_xcom(
    dagbag: Any, sandbox: SandboxServer, mode: str, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    connection = json.loads(sandbox.connection_json())
    del connection["extra"]["ui_url"]
    monkeypatch.setenv(CONN_ENV, json.dumps(connection))
    result = run(dagbag, f"test_workflow_{mode}", workflow_id=WORKFLOW)
    assert result.states["run"] == "success"
    assert NOT_FOUND not in task_output(capfd.readouterr().out)
    assert not result.xcom("run", "_link_ExecutionLink")
    assert result.xcom("run", "execution_id")  # the work was started and published, only without a link


# At unit level: the operator answers for its links from what it pushed. ``ti_key=None`` would fail any XCom read,
# so an answer at all shows that none was made.


def test_the_operator_answers_with_the_link_it_pushed(sandbox: SandboxServer) -> None:
    operator = ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, wait_for_completion=False)
    context = make_context()
    execution = operator.execute(context)
    url = f"{sandbox.base_url}/ui/workflows/{WORKFLOW}/executions/{execution['id']}"
    assert context["ti"].xcom["_link_ExecutionLink"] == url
    assert ExecutionLink().get_link(operator, ti_key=None) == url


def test_an_operator_that_failed_before_starting_answers_with_no_link(sandbox: SandboxServer) -> None:
    operator = ExecuteWorkflowOperator(task_id="t", workflow_id="wf_does_not_exist")
    context = make_context()
    with pytest.raises(AirflowException):
        operator.execute(context)
    assert context["ti"].xcom == {}
    assert ExecutionLink().get_link(operator, ti_key=None) == ""


def test_the_link_pushed_before_a_deferral_is_handed_to_the_resumed_process(sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(SLOW)
    context = make_context()
    with pytest.raises(TaskDeferred) as deferred:
        ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, deferrable=True, poll_interval=POLL).execute(context)
    url = context["ti"].xcom["_link_ExecutionLink"]
    handed = json.loads(json.dumps(deferred.value.kwargs))  # as Airflow stores it between the two processes
    assert handed["deferral"]["links"] == {"_link_ExecutionLink": url}
    sandbox.state.advance(1300)
    event = triggerer_event(deferred.value.trigger)
    resumed = ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, deferrable=True)
    resumed.execute_complete(context, event=event, **handed)
    assert ExecutionLink().get_link(resumed, ti_key=None) == url
