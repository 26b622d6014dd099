"""The walk from a job operator's ``execute`` to the HTTP send reads operator -> job description -> hook -> wire.

Recorded, not asserted from reading: a profile hook notes the provider's frames on the stack when httpcore is
asked to send the start's request to the sandbox. The order of the layers, and how few modules a reader opens,
is what the layout promises (CONTRIBUTING.md, "Layout"); a change that adds a hop shows here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from airflow_provider_analytics.operators.reports import GenerateReportOperator
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.context import make_context
from tests.support.names import WORKFLOW

PACKAGE = "airflow_provider_analytics."


def modules_at_the_first_send(run: Callable[[], Any]) -> list[str]:
    """The provider's modules on the stack (outermost first, each once) when the first request is sent."""
    found: list[str] = []

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if found or event != "call" or frame.f_code.co_name != "handle_request":
            return
        if not str(frame.f_globals.get("__name__", "")).startswith("httpcore"):
            return
        names: list[str] = []
        caller: FrameType | None = frame
        while caller is not None:
            name = str(caller.f_globals.get("__name__", ""))
            if name.startswith(PACKAGE) and name not in names:
                names.append(name)
            caller = caller.f_back
        found.extend(reversed(names))

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return [name.removeprefix(PACKAGE) for name in found]


@pytest.mark.parametrize(
    ("operator", "description"),
    [
        pytest.param(
            lambda: ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, wait_for_completion=False),
            "_jobs.executions",
            id="execute-workflow",
        ),
        pytest.param(
            lambda: GenerateReportOperator(task_id="report", dashboard_ids=["db_sales"], wait_for_completion=False),
            "_jobs.reports",
            id="generate-report",
        ),
    ],
)
def test_execute_reaches_the_send_through_operator_job_hook_wire(
    sandbox: SandboxServer, operator: Callable[[], Any], description: str
) -> None:
    walk = modules_at_the_first_send(lambda: operator().execute(make_context()))

    assert walk == [
        "operators._common",  # task_step: closes the hook, keeps the result for lineage
        "operators.jobs",  # RemoteJobOperator: execute, the mixin's submit_job, the start's key
        description,  # the kind of work: which hook method starts it
        "hooks.analytics",  # the hook: the request builder (wire._endpoints) and its client
        "wire.client",  # the retry loop's driver (wire._core's exchange is a generator it drives)
        "wire._transports",  # the deadline on every request, over httpx's transport
    ]
    assert [r.method for r in sandbox.state.requests] == ["POST"]
