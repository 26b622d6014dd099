"""Generate reports from dashboards and download them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics import operators  # its _runtime: what a task uses once it runs
from airflow_provider_analytics.operators._common import DEFAULT_DEFERRABLE, task_step
from airflow_provider_analytics.operators.jobs import RemoteJobOperator
from airflow_provider_analytics.operators.links import ReportLink
from airflow_provider_analytics.operators.waiting import RemoteWaitOperator, started_over

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

    from airflow_provider_analytics._jobs.base import RemoteJob
    from airflow_provider_analytics._jobs.reports import ReportJob

__all__ = ["DownloadReportOperator", "GenerateReportOperator"]


class GenerateReportOperator(RemoteJobOperator):
    """Generate a report from dashboards and (by default) wait until it is ready; returns the report.

    ``failed`` or ``expired`` fails the task with the platform's error. A task retry reattaches to the
    report being generated, or returns the ready one, instead of generating another.

    :param dashboard_ids: the dashboards to include, at least one (templated); give it or ``dashboard_names``.
    :param dashboard_names: the dashboards' names instead of their ids (templated): looked up once at the start
        of each try (one listing of dashboards, logged with the ids they resolved to); names that no dashboard or
        several dashboards have fail the task before anything is generated, all of them in one message.
    :param format: one of ``pdf csv xlsx html`` (templated).
    :param name: the report's name, also the downloaded file's name (templated).
    :param parameters: report parameters (templated).
    :param wait_for_completion: wait until ready (default ``True``); ``False`` returns the pending report at
        once.
    :param deferrable: wait in the triggerer (default: ``[operators] default_deferrable``).
    :param poll_interval: seconds (or a ``timedelta``) between status checks (default 10).
    :param timeout: seconds (or a ``timedelta``) to wait at most, then the generation is cancelled (default
        ``None``: no limit but the task's ``execution_timeout``).
    :param cancel_on_kill: cancel the generation when the task is killed or times out (default ``True``).
    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    # Where Airflow 3.3's task_state_store keeps the report: later tries read it back, so it never changes.
    external_id_key = "analytics_report"
    template_fields = ("dashboard_ids", "dashboard_names", "format", "name", "parameters")
    template_fields_renderers = {"parameters": "json"}
    operator_extra_links = (ReportLink(),)
    ui_color = "#fef3e8"

    @property
    def job(self) -> type[ReportJob]:
        """A report (``_jobs/reports.py``)."""
        return operators._runtime.ReportJob

    def __init__(
        self,
        *,
        dashboard_ids: Sequence[str] | None = None,
        dashboard_names: Sequence[str] | None = None,
        format: str = "pdf",
        name: str | None = None,
        parameters: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if (dashboard_ids is None) == (dashboard_names is None):
            operators._runtime.one_of(dashboard_ids, dashboard_names, "dashboard_ids", "dashboard_names")
        super().__init__(**kwargs)
        self.dashboard_ids = dashboard_ids
        self.dashboard_names = dashboard_names
        self.format = format
        self.name = name
        self.parameters = parameters


class DownloadReportOperator(RemoteWaitOperator):
    """Stream a report to a local path or any ``ObjectStoragePath`` URI; returns the written file's URI.

    A report still being generated is waited for (bounded by ``timeout``) instead of failing. The file is
    verified (length and ``Repr-Digest``) before it appears at the destination. Declare the file as an
    ``outlets=[Asset(...)]`` to schedule downstream DAGs on it: each outlet's event carries the file's
    ``uri``, ``size`` and ``sha256``.

    :param report_id: the report to download (templated).
    :param destination: a file path or URI, or a folder ending in ``/`` (templated).
    :param overwrite: replace an existing file; without it an existing target fails before downloading. A retry
        keeps a file that already holds exactly the report (its ``size_bytes`` and ``sha256``): an earlier try
        wrote it and was lost before it could report it, so the retry reports it instead of failing.
    :param deferrable: wait for readiness in the triggerer (default: ``[operators] default_deferrable``).
    :param poll_interval: seconds (or a ``timedelta``) between readiness checks (default 10).
    :param timeout: seconds (or a ``timedelta``) to wait for readiness at most (default 3600).
    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    template_fields = ("report_id", "destination")
    # A report that failed or expired stays so: this task does not generate it, so no retry can change that.
    failed_work_is_final = True

    @property
    def job(self) -> type[ReportJob]:
        """A report (``_jobs/reports.py``)."""
        return operators._runtime.ReportJob

    def __init__(
        self,
        *,
        report_id: str,
        destination: Any,
        overwrite: bool = False,
        deferrable: bool = DEFAULT_DEFERRABLE,
        poll_interval: float | timedelta = 10,
        timeout: float | timedelta | None = 3600,
        **kwargs: Any,
    ) -> None:
        super().__init__(deferrable=deferrable, poll_interval=poll_interval, timeout=timeout, **kwargs)
        self.report_id = report_id
        self.destination = destination
        self.overwrite = overwrite

    @task_step
    def execute(self, context: Context) -> str:
        operators._runtime.validate_id(self.report_id, "report_id")
        # Parsed once for this task step (on an object store, is_dir() is a request) and handed to the hook.
        where = operators._runtime.Destination.parse(self.destination)
        # Fail before waiting; the hook checks again right before it writes. A retry's existing file may be the
        # one its earlier try wrote: only the ready report can tell, so the hook decides that one.
        if not where.is_folder and (operators._runtime.try_number_of(context) or 1) == 1:
            operators._runtime.refuse_existing(where.path, self.overwrite)
        report: RemoteJob = self.job.from_target({"report_id": self.report_id})
        deadline = self.begin_try(context).deadline
        resource, outcome = self.wait_for(report, self.read(report.fetch()), deadline)
        if outcome == "failure":
            self.failed(report, resource)
        return self._download(context, resource, where)

    @task_step
    def execute_complete(self, context: Context, event: Any = None, deferral: Mapping[str, Any] | None = None) -> str:
        """Resume once the report is ready (or the wait failed), then download.

        :param context: the task's context.
        :param event: the trigger's event.
        :param deferral: what the deferring process handed over (``RemoteWaitOperator.deferral``).
        """
        if started_over(self.log, event, context):
            return self.execute(context)
        expected = self.job.from_target({"report_id": self.report_id})
        report, resource, outcome = self.resume(event, expected, deferral)
        if outcome == "failure":
            self.failed(report, resource)
        return self._download(context, resource)

    def _download(self, context: Context, report: Mapping[str, Any], parsed: object = None) -> str:
        # parsed: the destination execute parsed in this task step; a resumed step (execute_complete) has none.
        destination = self.destination if parsed is None else parsed
        retry = (operators._runtime.try_number_of(context) or 1) > 1
        result = self.hook.download_report(
            self.report_id, destination, overwrite=self.overwrite, report=report, keep_identical=retry
        )
        # Kept: an earlier try wrote the file and was lost before it could say so (holds_report checked it).
        said = "Kept report %s at %s (%d bytes, sha256 %s): an earlier try wrote it; nothing downloaded again"
        self.log.info(said if result.kept else "Downloaded report %s to %s (%d bytes, sha256 %s)", self.report_id,
                      result.uri, result.size, result.sha256)  # fmt: skip
        context["ti"].xcom_push(key="download", value=result.to_dict())
        for outlet in self.outlets:
            if isinstance(outlet, operators._runtime.Asset):  # a Dataset on Airflow 2
                context["outlet_events"][outlet].extra.update(result.to_dict())
        return result.uri

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the report read, the file written, its size and sha-256 (docs/lineage.md).

        :param task_instance: the finished task instance.
        """
        return operators._runtime.lineage_for(self, task_instance, "download_report")
