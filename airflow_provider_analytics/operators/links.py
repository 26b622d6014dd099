"""Extra links into the platform UI, built from the connection's ``ui_url`` and pushed before waiting.

The Airflow UI shows them on the task instance's Details tab (Airflow 3) or in its task pop-up (2.11).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import BaseOperatorLink

from airflow_provider_analytics import operators  # its _runtime: what a task uses once it runs

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

__all__ = ["AnalyticsLink", "DashboardLink", "ExecutionLink", "ReportLink"]


class AnalyticsLink(BaseOperatorLink):
    """A link whose URL the operator pushed to XCom; empty when none was pushed."""

    name = "Analytics Platform"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        """The URL the task pushed, ``""`` when it pushed none.

        Airflow 3 asks every link once more as the task ends, in the task's own process and with the live
        operator, and stores the answer under the link's key. Reading an XCom that was never pushed there (a
        task that failed before it started its work, a connection without ``ui_url``) makes the task's supervisor
        log ``XCom not found`` at ERROR, and no public read is quiet for one map index of a mapped task. So an
        operator that knows what this try pushed (``pushed_links``, kept across a deferral) answers without a
        read; anyone else (Airflow 2.11's web server, which reads the XCom table quietly) reads the XCom.

        :param operator: the task (live in the task's process; deserialized in the UI).
        :param ti_key: the task instance (key) Airflow asks for.
        """
        key = operators._runtime.link_xcom_key(self)
        pushed = getattr(operator, "pushed_links", None)
        if isinstance(pushed, Mapping):
            return str(pushed.get(key) or "")
        return operators._runtime.link_url(ti_key, key)

    @classmethod
    def persist(cls, context: Context, url: str | None) -> None:
        """Push ``url`` so the UI shows the link (nothing when the connection has no ``ui_url``)."""
        if url:
            context["ti"].xcom_push(key=operators._runtime.link_xcom_key(cls()), value=url)


class ExecutionLink(AnalyticsLink):
    """The workflow execution in the platform UI."""

    name = "Analytics execution"


class ReportLink(AnalyticsLink):
    """The report in the platform UI."""

    name = "Analytics report"


class DashboardLink(AnalyticsLink):
    """The dashboard in the platform UI."""

    name = "Analytics dashboard"
