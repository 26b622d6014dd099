"""Running an operator the way a worker does, then asking it for lineage as the OpenLineage listener does."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.context import StubTaskInstance, make_context


class RecordingTaskInstance(StubTaskInstance):
    """The stub task instance; ``xcom`` also holds the return value, as Airflow pushes it after ``execute``."""


def run_task(operator: Any, **context_extra: Any) -> RecordingTaskInstance:
    """``execute`` as a worker runs it, the return value pushed as ``return_value`` (as Airflow does)."""
    ti = RecordingTaskInstance()
    ti.task_id = operator.task_id
    context = make_context(ti=ti, **context_extra)
    result = operator.execute(context)
    if result is not None:
        ti.xcom["return_value"] = result
    return ti


def namespace(sandbox: SandboxServer) -> str:
    """The OpenLineage namespace of the sandbox platform: ``analytics://127.0.0.1:<port>``."""
    return f"analytics://{urlsplit(sandbox.base_url).netloc}"


def names(datasets: list[Any]) -> list[tuple[str, str]]:
    return [(dataset.namespace, dataset.name) for dataset in datasets]


@pytest.fixture
def platform(sandbox: SandboxServer) -> str:
    return namespace(sandbox)
