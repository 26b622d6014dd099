"""Everything about waiting for a report: its id, its read, its verdict, its cancel, its name."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.waits.base import Wait
from airflow_provider_analytics.wire.outcomes import Outcome, report_outcome

if TYPE_CHECKING:
    from airflow_provider_analytics.wire.calls import Call
    from airflow_provider_analytics.wire.models import Report


@dataclass(frozen=True)
class ReportWait(Wait):
    """A report being generated: ``ready`` is success; ``failed`` and ``expired`` are failures.

    :param report_id: the report's id.
    """

    kind = "report"
    status_phrases = {"generating": "is being generated", "failed": "failed", "expired": "expired"}
    report_id: str

    @property
    def target(self) -> dict[str, Any]:
        return {"report_id": self.report_id}

    @classmethod
    def from_target(cls, target: Mapping[str, Any]) -> ReportWait:
        return cls(report_id=target.get("report_id"))  # type: ignore[arg-type]

    def fetch(self) -> Call[Report]:
        from airflow_provider_analytics.wire import endpoints  # on first use: not at DAG parse time

        return endpoints.get_report(self.report_id)

    def outcome(self, resource: Mapping[str, Any]) -> Outcome | None:
        return report_outcome(resource)

    def cancel(self) -> Call[Report]:
        from airflow_provider_analytics.wire import endpoints  # on first use: not at DAG parse time

        return endpoints.cancel_report(self.report_id)

    def describe(self) -> str:
        return f"report {self.report_id}"
