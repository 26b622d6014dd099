"""Waits for a report to be generated."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_analytics.hooks.analytics import AnalyticsAsyncHook
from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger
from airflow_provider_analytics.wire.outcomes import Outcome, report_outcome


class ReportTrigger(AnalyticsPollTrigger):
    """Fires when a report is ``ready`` (success), ``failed`` or ``expired`` (failure).

    :param report_id: the report's id.
    :param kwargs: ``poll_interval``, ``deadline``, ``analytics_conn_id``.
    """

    kind = "report"

    def __init__(self, *, report_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.report_id = report_id

    @property
    def target(self) -> dict[str, Any]:
        return {"report_id": self.report_id}

    async def fetch(self, hook: AnalyticsAsyncHook) -> Mapping[str, Any]:
        return await hook.get_report(self.report_id)

    def outcome(self, resource: Mapping[str, Any]) -> Outcome | None:
        return report_outcome(resource)

    async def cancel(self, hook: AnalyticsAsyncHook) -> bool:
        await hook.cancel_report(self.report_id)
        return True
