"""A failed execution whose ``error`` the platform sent as bare text fails the task with that text."""

from __future__ import annotations

import json

import pytest

from airflow_provider_analytics.operators.errors import RemoteJobFailed
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.context import make_context
from tests.support.names import JSON_HEADERS, POLL, WORKFLOW


def test_the_failed_task_shows_the_platforms_text(sandbox: SandboxServer) -> None:
    text = "warehouse quota exceeded\nretry tomorrow"
    failed = json.dumps({"id": "ex_1", "workflow_id": WORKFLOW, "status": "failed", "error": text})
    sandbox.state.inject(Fault.respond(200, headers=JSON_HEADERS, body=failed, path="/executions/ex_1$", times=5))
    sandbox.state.inject(
        Fault.respond(
            202,
            headers=JSON_HEADERS,
            body=json.dumps({"id": "ex_1", "workflow_id": WORKFLOW, "status": "queued", "error": None}),
            path=f"/v1/workflows/{WORKFLOW}/execute$",
        )
    )
    op = ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, poll_interval=POLL)
    with pytest.raises(RemoteJobFailed) as caught:
        op.execute(make_context())
    assert str(caught.value) == (
        f"execution ex_1 of workflow {WORKFLOW} failed: unknown_error: warehouse quota exceeded retry tomorrow"
    )
