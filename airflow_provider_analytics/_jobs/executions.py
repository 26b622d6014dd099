"""Everything about a workflow execution: how it starts, its ids, its read, its verdict, its cancel, its name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics._jobs.base import StartableJob
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._ids import validate_id
from airflow_provider_analytics.wire._names import resolve_name
from airflow_provider_analytics.wire._outcomes import execution_outcome
from airflow_provider_analytics.wire.errors import AnswerMismatchError, clean_text

if TYPE_CHECKING:
    from airflow_provider_analytics.hooks.analytics import AnalyticsHook
    from airflow_provider_analytics.wire._calls import Call
    from airflow_provider_analytics.wire._models import Execution
    from airflow_provider_analytics.wire._outcomes import Outcome


class ExecutionJob(StartableJob):
    """An execution of a workflow: ``succeeded`` is success; ``failed`` and ``cancelled`` are failures.

    :param workflow_id: the workflow's id.
    :param execution_id: the execution's id.
    """

    kind = "execution"
    timestamps = ("created_at", "finished_at")
    noun = "execution"
    xcom_key = "execution_id"
    lineage_operation = "execute_workflow"
    start_arguments = ("workflow_id", "inputs")
    mapping_arguments = ("inputs",)
    name_arguments = {"workflow_name": "workflow_id"}
    status_phrases = {"succeeded": "succeeded", "failed": "failed", "cancelled": "was cancelled"}
    __slots__ = ("execution_id", "workflow_id")
    workflow_id: str
    execution_id: str

    def __init__(self, workflow_id: str, execution_id: str) -> None:
        self._set(workflow_id=workflow_id, execution_id=execution_id)

    @property
    def target(self) -> dict[str, Any]:
        return {"workflow_id": self.workflow_id, "execution_id": self.execution_id}

    @classmethod
    def from_target(cls, target: Mapping[str, Any]) -> ExecutionJob:
        return cls(workflow_id=target.get("workflow_id"), execution_id=target.get("execution_id"))  # type: ignore[arg-type]

    # Starting, and finding it again ----------------------------------------------------------------------

    @classmethod
    def validate(cls, *, workflow_id: Any, inputs: Any = None) -> None:  # type: ignore[override]

        validate_id(workflow_id, "workflow_id")

    @classmethod
    def resolve_names(cls, hook: AnalyticsHook, *, workflow_name: Any = None) -> dict[str, Any]:  # type: ignore[override]

        if workflow_name is None:
            return {}
        return {"workflow_id": resolve_name("workflow", hook.list_workflows(), workflow_name)}

    @classmethod
    def start(  # type: ignore[override]
        cls, hook: AnalyticsHook, idempotency_key: str, *, workflow_id: str, inputs: Mapping[str, Any] | None = None
    ) -> Mapping[str, Any]:
        return hook.execute_workflow(workflow_id, inputs, idempotency_key=idempotency_key)

    @classmethod
    def from_answer(cls, resource: Mapping[str, Any], *, workflow_id: str, **arguments: Any) -> ExecutionJob:  # type: ignore[override]
        if resource.get("workflow_id", workflow_id) != workflow_id:
            # The start of another workflow's execution: waiting on it would report that workflow's fate as ours.
            raise AnswerMismatchError(
                f"asked to execute workflow {workflow_id!r}, the platform answered with execution "
                f"{clean_text(repr(resource.get('id')), 80)} of workflow "
                f"{clean_text(repr(resource.get('workflow_id')), 80)}; not waiting on it"
            )
        return cls(workflow_id=workflow_id, execution_id=resource["id"])

    @property
    def external_id(self) -> dict[str, str]:
        # Stored in task_state_store and hashed into the next start's key: its keys stay in this order.
        return {"workflow_id": self.workflow_id, "execution_id": self.execution_id}

    @classmethod
    def from_external_id(cls, external_id: Any) -> ExecutionJob:
        return cls.from_target(external_id)

    @property
    def xcom_value(self) -> str:
        return self.execution_id

    @property
    def ui_path(self) -> str:
        return f"workflows/{self.workflow_id}/executions/{self.execution_id}"

    # Reading, judging, stopping -------------------------------------------------------------------------

    def fetch(self) -> Call[Execution]:
        return self.checked(endpoints.get_execution(self.workflow_id, self.execution_id))

    @property
    def answer_ids(self) -> dict[str, str]:
        return {"id": self.execution_id, "workflow_id": self.workflow_id}

    @classmethod
    def verdict(cls, status: object) -> Outcome | None:
        return execution_outcome({"status": status})

    def cancel(self) -> Call[Execution]:
        return endpoints.cancel_execution(self.workflow_id, self.execution_id)

    def describe(self) -> str:
        return f"execution {self.execution_id} of workflow {self.workflow_id}"
