"""Waits for a workflow execution to finish."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_analytics.hooks.analytics import AnalyticsAsyncHook
from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger
from airflow_provider_analytics.wire.outcomes import Outcome, execution_outcome


class ExecutionTrigger(AnalyticsPollTrigger):
    """Fires when an execution is ``succeeded`` (success), ``failed`` or ``cancelled`` (failure).

    :param workflow_id: the workflow's id.
    :param execution_id: the execution's id.
    :param kwargs: ``poll_interval``, ``deadline``, ``analytics_conn_id``.
    """

    kind = "execution"

    def __init__(self, *, workflow_id: str, execution_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.workflow_id = workflow_id
        self.execution_id = execution_id

    @property
    def target(self) -> dict[str, Any]:
        return {"workflow_id": self.workflow_id, "execution_id": self.execution_id}

    async def fetch(self, hook: AnalyticsAsyncHook) -> Mapping[str, Any]:
        return await hook.get_execution(self.workflow_id, self.execution_id)

    def outcome(self, resource: Mapping[str, Any]) -> Outcome | None:
        return execution_outcome(resource)

    async def cancel(self, hook: AnalyticsAsyncHook) -> bool:
        await hook.cancel_execution(self.workflow_id, self.execution_id)
        return True
