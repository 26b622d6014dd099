"""Extra links into the platform UI, built from the connection's ``ui_url`` and pushed before waiting."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperatorLink, Context


class AnalyticsLink(BaseOperatorLink):
    """A link whose URL the operator pushed to XCom under :attr:`xcom_key`; empty when none was pushed."""

    name = "Analytics Platform"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        from airflow.sdk.bases.xcom import BaseXCom

        return str(BaseXCom.get_value(ti_key=ti_key, key=self.xcom_key) or "")

    @classmethod
    def persist(cls, context: Context, url: str | None) -> None:
        """Push ``url`` so the UI shows the link (nothing when the connection has no ``ui_url``)."""
        if url:
            context["ti"].xcom_push(key=cls().xcom_key, value=url)


class ExecutionLink(AnalyticsLink):
    """The workflow execution in the platform UI."""

    name = "Analytics execution"


class ReportLink(AnalyticsLink):
    """The report in the platform UI."""

    name = "Analytics report"


class DashboardLink(AnalyticsLink):
    """The dashboard in the platform UI."""

    name = "Analytics dashboard"
