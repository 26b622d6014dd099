"""Everything about a report: how it is generated, its id, its read, its verdict, its cancel, its name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics._jobs.base import StartableJob
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._names import ids_for_names
from airflow_provider_analytics.wire._outcomes import report_outcome
from airflow_provider_analytics.wire.errors import AnalyticsInputError

if TYPE_CHECKING:
    from airflow_provider_analytics.hooks.analytics import AnalyticsHook
    from airflow_provider_analytics.wire._calls import Call
    from airflow_provider_analytics.wire._models import Report
    from airflow_provider_analytics.wire._outcomes import Outcome


class ReportJob(StartableJob):
    """A report being generated: ``ready`` is success; ``failed`` and ``expired`` are failures.

    :param report_id: the report's id.
    """

    kind = "report"
    timestamps = ("created_at", "completed_at")
    noun = "report"
    xcom_key = "report_id"
    lineage_operation = "generate_report"
    start_arguments = ("dashboard_ids", "format", "name", "parameters")
    mapping_arguments = ("parameters",)
    name_arguments = {"dashboard_names": "dashboard_ids"}
    status_phrases = {"generating": "is being generated", "failed": "failed", "expired": "expired"}
    __slots__ = ("report_id",)
    report_id: str

    def __init__(self, report_id: str) -> None:
        self._set(report_id=report_id)

    @property
    def target(self) -> dict[str, Any]:
        return {"report_id": self.report_id}

    @classmethod
    def from_target(cls, target: Mapping[str, Any]) -> ReportJob:
        return cls(report_id=target.get("report_id"))  # type: ignore[arg-type]

    # Starting, and finding it again ----------------------------------------------------------------------

    @classmethod
    def validate(  # type: ignore[override]
        cls, *, dashboard_ids: Any, format: Any, name: Any = None, parameters: Any = None
    ) -> None:
        # Building the request checks ids, format and the dashboard list without sending anything.
        endpoints.generate_report(dashboard_ids, format, name, parameters)

    @classmethod
    def resolve_names(cls, hook: AnalyticsHook, *, dashboard_names: Any = None) -> dict[str, Any]:  # type: ignore[override]

        if dashboard_names is None:
            return {}
        if isinstance(dashboard_names, str) or not isinstance(dashboard_names, Sequence):
            raise AnalyticsInputError(f"dashboard_names must be a list of names, got {dashboard_names!r}")
        return {"dashboard_ids": ids_for_names("dashboard", hook.list_dashboards(), list(dashboard_names))}

    @classmethod
    def start(  # type: ignore[override]
        cls,
        hook: AnalyticsHook,
        idempotency_key: str,
        *,
        dashboard_ids: Sequence[str],
        format: str,
        name: str | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> Mapping[str, Any]:
        return hook.generate_report(dashboard_ids, format, name, parameters, idempotency_key=idempotency_key)

    @classmethod
    def from_answer(cls, resource: Mapping[str, Any], **arguments: Any) -> ReportJob:
        return cls(report_id=resource["id"])

    @property
    def external_id(self) -> str:
        return self.report_id

    @classmethod
    def from_external_id(cls, external_id: Any) -> ReportJob:
        return cls(report_id=external_id)

    @property
    def xcom_value(self) -> str:
        return self.report_id

    @property
    def ui_path(self) -> str:
        return f"reports/{self.report_id}"

    # Reading, judging, stopping -------------------------------------------------------------------------

    def fetch(self) -> Call[Report]:
        return self.checked(endpoints.get_report(self.report_id))

    @property
    def answer_ids(self) -> dict[str, str]:
        return {"id": self.report_id}

    @classmethod
    def verdict(cls, status: object) -> Outcome | None:
        return report_outcome({"status": status})

    def cancel(self) -> Call[Report]:
        return endpoints.cancel_report(self.report_id)

    def describe(self) -> str:
        return f"report {self.report_id}"
