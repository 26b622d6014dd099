"""Waits for a report to be generated; what that means is in ``_jobs/reports.py``."""

from __future__ import annotations

from typing import Any

from airflow_provider_analytics._jobs.reports import ReportJob
from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger

__all__ = ["ReportTrigger"]


class ReportTrigger(AnalyticsPollTrigger):
    """Fires when a report is ``ready`` (success), ``failed`` or ``expired`` (failure).

    :param report_id: the report's id.
    :param kwargs: ``poll_interval``, ``deadline``, ``analytics_conn_id``, ``cancel_on_kill``, ``try_number``.
    """

    kind = ReportJob.kind

    def __init__(self, *, report_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.report_id = report_id
        self._job = ReportJob(report_id=report_id)

    @property
    def job(self) -> ReportJob:
        return self._job
