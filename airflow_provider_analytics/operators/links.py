"""Extra links into the platform UI, built from the connection's ``ui_url`` and pushed before waiting.

The Airflow UI shows them on the task instance's Details tab (Airflow 3) or in its task pop-up (2.11).
"""

from __future__ import annotations

from typing import Any

from airflow.providers.common.compat.sdk import BaseOperatorLink, Context

from airflow_provider_analytics.version_compat import link_url, link_xcom_key


class AnalyticsLink(BaseOperatorLink):
    """A link whose URL the operator pushed to XCom; empty when none was pushed."""

    name = "Analytics Platform"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        return link_url(ti_key, link_xcom_key(self))

    @classmethod
    def persist(cls, context: Context, url: str | None) -> None:
        """Push ``url`` so the UI shows the link (nothing when the connection has no ``ui_url``)."""
        if url:
            context["ti"].xcom_push(key=link_xcom_key(cls()), value=url)


class ExecutionLink(AnalyticsLink):
    """The workflow execution in the platform UI."""

    name = "Analytics execution"


class ReportLink(AnalyticsLink):
    """The report in the platform UI."""

    name = "Analytics report"


class DashboardLink(AnalyticsLink):
    """The dashboard in the platform UI."""

    name = "Analytics dashboard"
