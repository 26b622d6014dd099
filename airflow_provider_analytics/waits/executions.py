"""Everything about waiting for a workflow execution: its ids, its read, its verdict, its cancel, its name."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.waits.base import Wait
from airflow_provider_analytics.wire.outcomes import Outcome, execution_outcome

if TYPE_CHECKING:
    from airflow_provider_analytics.wire.calls import Call
    from airflow_provider_analytics.wire.models import Execution


@dataclass(frozen=True)
class ExecutionWait(Wait):
    """An execution of a workflow: ``succeeded`` is success; ``failed`` and ``cancelled`` are failures.

    :param workflow_id: the workflow's id.
    :param execution_id: the execution's id.
    """

    kind = "execution"
    status_phrases = {"succeeded": "succeeded", "failed": "failed", "cancelled": "was cancelled"}
    workflow_id: str
    execution_id: str

    @property
    def target(self) -> dict[str, Any]:
        return {"workflow_id": self.workflow_id, "execution_id": self.execution_id}

    @classmethod
    def from_target(cls, target: Mapping[str, Any]) -> ExecutionWait:
        return cls(workflow_id=target.get("workflow_id"), execution_id=target.get("execution_id"))  # type: ignore[arg-type]

    def fetch(self) -> Call[Execution]:
        from airflow_provider_analytics.wire import endpoints  # on first use: not at DAG parse time

        return endpoints.get_execution(self.workflow_id, self.execution_id)

    def outcome(self, resource: Mapping[str, Any]) -> Outcome | None:
        return execution_outcome(resource)

    def cancel(self) -> Call[Execution]:
        from airflow_provider_analytics.wire import endpoints  # on first use: not at DAG parse time

        return endpoints.cancel_execution(self.workflow_id, self.execution_id)

    def describe(self) -> str:
        return f"execution {self.execution_id} of workflow {self.workflow_id}"
