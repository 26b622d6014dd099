"""Waits for a report to be generated; what that means is in ``waits/reports.py``."""

from __future__ import annotations

from typing import Any

from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger
from airflow_provider_analytics.waits.reports import ReportWait


class ReportTrigger(AnalyticsPollTrigger):
    """Fires when a report is ``ready`` (success), ``failed`` or ``expired`` (failure).

    :param report_id: the report's id.
    :param kwargs: ``poll_interval``, ``deadline``, ``analytics_conn_id``, ``cancel_on_kill``, ``try_number``.
    """

    kind = ReportWait.kind

    def __init__(self, *, report_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.report_id = report_id
        self._wait = ReportWait(report_id=report_id)

    @property
    def wait(self) -> ReportWait:
        return self._wait
