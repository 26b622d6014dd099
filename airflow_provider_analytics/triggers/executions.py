"""Waits for a workflow execution to finish; what that means is in ``_jobs/executions.py``."""

from __future__ import annotations

from typing import Any

from airflow_provider_analytics._jobs.executions import ExecutionJob
from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger

__all__ = ["ExecutionTrigger"]


class ExecutionTrigger(AnalyticsPollTrigger):
    """Fires when an execution is ``succeeded`` (success), ``failed`` or ``cancelled`` (failure).

    :param workflow_id: the workflow's id.
    :param execution_id: the execution's id.
    :param kwargs: ``poll_interval``, ``deadline``, ``analytics_conn_id``, ``cancel_on_kill``, ``try_number``.
    """

    kind = ExecutionJob.kind

    def __init__(self, *, workflow_id: str, execution_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.workflow_id = workflow_id
        self.execution_id = execution_id
        self._job = ExecutionJob(workflow_id=workflow_id, execution_id=execution_id)

    @property
    def job(self) -> ExecutionJob:
        return self._job
