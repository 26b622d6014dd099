"""Run platform workflows from DAGs, and create them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics import operators  # its _runtime: what a task uses once it runs
from airflow_provider_analytics.operators._common import (
    AnalyticsBaseOperator,
    check_templated,
    task_instance_key,
    task_step,
)
from airflow_provider_analytics.operators.jobs import RemoteJobOperator
from airflow_provider_analytics.operators.links import ExecutionLink

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

    from airflow_provider_analytics._jobs.executions import ExecutionJob

__all__ = ["CreateWorkflowOperator", "ExecuteWorkflowOperator"]


class ExecuteWorkflowOperator(RemoteJobOperator):
    """Start a workflow execution and (by default) wait for it; returns the final execution with its outputs.

    A failed or cancelled execution fails the task with the platform's error type and message. A task
    retry reattaches to a running execution, returns a succeeded one, and starts a fresh one only after a
    failure. Killing the task (or running out of ``timeout``) cancels the execution.

    :param workflow_id: the workflow to run (templated); give it or ``workflow_name``.
    :param workflow_name: the workflow's name instead of its id (templated): looked up once at the start of each
        try (one listing of workflows, logged with the id it resolved to); a name that no workflow or several
        workflows have fails the task before anything is started.
    :param inputs: the execution's inputs, a mapping (templated).
    :param wait_for_completion: wait for a terminal state (default ``True``); ``False`` returns the queued
        execution at once.
    :param deferrable: wait in the triggerer (default: ``[operators] default_deferrable``).
    :param poll_interval: seconds (or a ``timedelta``) between status checks (default 10).
    :param timeout: seconds (or a ``timedelta``) to wait at most, then the execution is cancelled (default
        ``None``: no limit but the task's ``execution_timeout``).
    :param cancel_on_kill: cancel the execution when the task is killed or times out (default ``True``).
    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    # Where Airflow 3.3's task_state_store keeps the execution: later tries read it back, so it never changes.
    external_id_key = "analytics_execution"
    template_fields = ("workflow_id", "workflow_name", "inputs")
    template_fields_renderers = {"inputs": "json"}
    operator_extra_links = (ExecutionLink(),)
    ui_color = "#e8f0fe"

    @property
    def job(self) -> type[ExecutionJob]:
        """A workflow execution (``_jobs/executions.py``)."""
        return operators._runtime.ExecutionJob

    def __init__(
        self,
        *,
        workflow_id: str | None = None,
        workflow_name: str | None = None,
        inputs: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if (workflow_id is None) == (workflow_name is None):
            operators._runtime.one_of(workflow_id, workflow_name, "workflow_id", "workflow_name")
        super().__init__(**kwargs)
        self.workflow_id = workflow_id
        self.workflow_name = workflow_name
        self.inputs = inputs


class CreateWorkflowOperator(AnalyticsBaseOperator):
    """Create a workflow; a retried task gets the first creation back instead of a duplicate.

    :param name: the workflow's name (templated).
    :param configuration: the workflow definition, a mapping (templated).
    :param description: optional description (templated).
    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    template_fields = ("name", "configuration", "description")
    template_fields_renderers = {"configuration": "json"}

    def __init__(
        self, *, name: str, configuration: Mapping[str, Any], description: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.name = name
        self.configuration = configuration
        self.description = description

    @task_step
    def execute(self, context: Context) -> dict[str, Any]:
        check_templated(self.configuration, "configuration")
        workflow = self.hook.create_workflow(
            self.name, self.configuration, self.description, idempotency_key=task_instance_key(context, "workflow")
        )
        workflow_id = operators._runtime.answered_id(workflow.get("id"), f"id of workflow {self.name!r}")
        self.log.info("Workflow %s (%s) is ready", workflow_id, self.name)
        return dict(workflow)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the workflow created (docs/lineage.md).

        :param task_instance: the finished task instance.
        """
        return operators._runtime.lineage_for(self, task_instance, "create_workflow")
