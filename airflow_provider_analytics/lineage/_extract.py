"""What a finished task read and wrote on the platform, in plain data (no OpenLineage here).

Each operator's lineage comes from what it already has in memory: its rendered arguments, the platform's
answer it returned and the id of the job it started (kept by :mod:`~airflow_provider_analytics.lineage._recording`;
nothing is read back through the task's supervisor, which a forked listener cannot safely use). At most a
couple of extra API calls fill what those cannot say (a chart's data source, a failed job's status), on a
client of their own with a short timeout and no retries, so lineage can only ever cost seconds. Anything
that cannot be learned is left out and said in :attr:`TaskLineage.gaps`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from airflow_provider_analytics.lineage._recording import RESULT, STARTED, recorded
from airflow_provider_analytics.lineage.uris import AnalyticsObject, analytics_object, file_dataset_parts, host_of

log = logging.getLogger(__name__)

# Per extra call: lineage must never hold a finished task for long (the listener's own limit is 10 s).
EXTRA_CALL_TIMEOUT = 3.0
# Execution inputs and outputs larger than this (as JSON) are reported by their keys only.
MAX_DETAIL_BYTES = 4096

DatasetName = tuple[str, str]  # OpenLineage (namespace, name)


@dataclass
class TaskLineage:
    """One task's reads and writes on the platform.

    :param operation: what the task did (``execute_workflow``, ``create_chart``, ...).
    :param platform: the platform's namespace, ``analytics://<host>``.
    :param inputs: datasets read, as OpenLineage ``(namespace, name)``.
    :param outputs: datasets written.
    :param ids: the platform's ids of what the task touched (``workflow_id``, ``execution_id``, ...).
    :param status: the remote job's last known status, for workflows and reports.
    :param details: small facts (a report's format, a file's size and sha-256, an execution's inputs).
    :param gaps: what could not be learned, and why.
    """

    operation: str
    platform: str
    inputs: list[DatasetName] = field(default_factory=list)
    outputs: list[DatasetName] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)
    status: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    gaps: list[str] = field(default_factory=list)


class TaskRecord:
    """What a finished task kept in memory, and the bounded extra calls lineage may make.

    :param operator: the operator that ran.
    :param task_instance: its task instance.
    :param failed: the task failed (its return value is then missing).
    :param max_extra_calls: the most platform calls lineage may make for this task.
    """

    def __init__(self, operator: Any, task_instance: Any, *, failed: bool, max_extra_calls: int = 2) -> None:
        self.operator = operator
        self.task_instance = task_instance
        self.failed = failed
        self.calls_left = max_extra_calls
        # The hook looked the connection up while the task ran; its token is already masked.
        from airflow_provider_analytics.connection._config import client_config_from_connection

        self._config = client_config_from_connection(operator.hook.connection)
        self.host = host_of(self._config.base_url)
        self.gaps: list[str] = []

    def returned(self) -> Any:
        """What ``execute`` (or ``execute_complete``) returned in this process, or ``None``."""
        return None if self.failed else recorded(self.operator, RESULT)

    def result(self) -> Mapping[str, Any]:
        """The task's return value when it is the platform's answer (a dict), else ``{}``."""
        value = self.returned()
        return value if isinstance(value, Mapping) else {}

    def started(self) -> Any:
        """The id of the remote job the task started or reattached to (workflows, reports), or ``None``."""
        return recorded(self.operator, STARTED)

    def obj(self, kind: str, object_id: Any) -> AnalyticsObject | None:
        """The named object, or ``None`` (noted in the gaps) when the id is missing or malformed."""
        if not isinstance(object_id, str):
            self.gaps.append(f"no {kind} id known")
            return None
        try:
            return analytics_object(self.host, kind, object_id)
        except ValueError as exc:
            self.gaps.append(str(exc))
            return None

    def fetch(self, what: str, call: Callable[[Any], Any]) -> Any:
        """One extra platform call, ``call(client)``, or ``None`` when the budget is spent or it fails.

        :param what: what is fetched, for the log and the gaps.
        :param call: takes the short-timeout client and returns the answer.
        """
        if self.calls_left <= 0:
            self.gaps.append(f"{what}: no extra call left")
            return None
        self.calls_left -= 1
        from airflow_provider_analytics.wire.client import AnalyticsClient
        from airflow_provider_analytics.wire.retry import RetryPolicy

        config = replace(
            self._config, timeout=min(self._config.timeout, EXTRA_CALL_TIMEOUT), retry=RetryPolicy(max_retries=0)
        )
        client = AnalyticsClient(config)
        try:
            return call(client)
        except Exception as exc:
            log.warning("Lineage: could not read %s (%s); reporting what is known without it", what, exc)
            self.gaps.append(f"{what}: {type(exc).__name__}: {exc}")
            return None
        finally:
            client.close()


def bounded(value: Any) -> Any:
    """``value`` when its JSON is small, else a note with its keys: facets must stay small."""
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        return {"unserialisable": type(value).__name__}
    if len(text) <= MAX_DETAIL_BYTES:
        return value
    keys = sorted(str(key) for key in value) if isinstance(value, Mapping) else []
    return {"truncated": True, "json_bytes": len(text), "keys": keys}


def _add(names: list[DatasetName], obj: AnalyticsObject | None) -> None:
    if obj is not None and (obj.namespace, obj.name) not in names:
        names.append((obj.namespace, obj.name))


def _file(names: list[DatasetName], uri: Any) -> None:
    if isinstance(uri, str) and uri:
        names.append(file_dataset_parts(uri))


# One function per operation: (record, lineage) -> None, filling ``lineage``.


def _connect_data_source(rec: TaskRecord, out: TaskLineage) -> None:
    source = rec.obj("data_source", rec.result().get("id"))
    _add(out.outputs, source)
    if source is not None:
        out.ids["data_source_id"] = source.id
    out.details["type"] = rec.operator.type


def _create_chart(rec: TaskRecord, out: TaskLineage) -> None:
    chart = rec.result()
    _add(out.inputs, rec.obj("data_source", chart.get("data_source_id", rec.operator.data_source_id)))
    created = rec.obj("chart", chart.get("id"))
    _add(out.outputs, created)
    if created is not None:
        out.ids["chart_id"] = created.id
    out.ids["data_source_id"] = str(chart.get("data_source_id", rec.operator.data_source_id))
    out.details["type"] = chart.get("type", rec.operator.type)


def _get_chart_data(rec: TaskRecord, out: TaskLineage) -> None:
    chart_id = rec.operator.chart_id
    out.ids["chart_id"] = str(chart_id)
    # The chart's query reads its data source; only the chart list says which one (one call).
    charts = rec.fetch(f"chart {chart_id}'s data source", lambda client: client.call(_endpoints().list_charts()))
    chart = next((item for item in charts or [] if item.get("id") == chart_id), None)
    if chart is not None:
        _add(out.inputs, rec.obj("data_source", chart.get("data_source_id")))
        out.ids["data_source_id"] = str(chart.get("data_source_id"))
    elif charts is not None:
        rec.gaps.append(f"chart {chart_id} is not in the chart list")
    _add(out.inputs, rec.obj("chart", chart_id))
    result = rec.result()
    _file(out.outputs, result.get("uri"))
    for key in ("rows", "format"):
        if key in result:
            out.details[key] = result[key]


def _dashboard(rec: TaskRecord, out: TaskLineage) -> None:
    dashboard = rec.result()
    layout = dashboard.get("layout", rec.operator.layout) or []
    for item in layout:
        _add(out.inputs, rec.obj("chart", item.get("chart_id") if isinstance(item, Mapping) else None))
    dashboard_id = dashboard.get("id") or getattr(rec.operator, "dashboard_id", None)
    written = rec.obj("dashboard", dashboard_id)
    _add(out.outputs, written)
    if written is not None:
        out.ids["dashboard_id"] = written.id
    if "version" in dashboard:
        out.details["version"] = dashboard["version"]


def _create_workflow(rec: TaskRecord, out: TaskLineage) -> None:
    workflow = rec.obj("workflow", rec.result().get("id"))
    _add(out.outputs, workflow)
    if workflow is not None:
        out.ids["workflow_id"] = workflow.id


def _apply_definitions(rec: TaskRecord, out: TaskLineage) -> None:
    # What the apply created or updated; what it left unchanged was neither read for the work nor written.
    applied = rec.result().get("applied") or {}
    written = applied.get("written") if isinstance(applied, Mapping) else None
    for item in written if isinstance(written, list) else []:
        if isinstance(item, Mapping):
            _add(out.outputs, rec.obj(str(item.get("kind")), item.get("id")))
    if isinstance(applied, Mapping) and isinstance(applied.get("counts"), Mapping):
        out.details.update({f"{action}d": count for action, count in applied["counts"].items()})


def _execute_workflow(rec: TaskRecord, out: TaskLineage) -> None:
    workflow_id = rec.operator.workflow_id
    _add(out.inputs, rec.obj("workflow", workflow_id))
    out.ids["workflow_id"] = str(workflow_id)
    execution = dict(rec.result())
    started = rec.started()
    execution_id = execution.get("id") or (started.get("execution_id") if isinstance(started, Mapping) else None)
    if isinstance(execution_id, str):
        out.ids["execution_id"] = execution_id
        if not execution:  # a failed task returns nothing: ask the platform how the execution ended
            fetched = rec.fetch(
                f"execution {execution_id}",
                lambda client: client.call(_endpoints().get_execution(workflow_id, execution_id)),
            )
            execution = dict(fetched or {})
    else:
        rec.gaps.append("no execution was started")
    _job_state(out, execution)
    for key in ("inputs", "outputs"):
        if execution.get(key) is not None:
            out.details[key] = bounded(execution[key])


def _generate_report(rec: TaskRecord, out: TaskLineage) -> None:
    report = dict(rec.result())
    for dashboard_id in report.get("dashboard_ids", rec.operator.dashboard_ids) or []:
        _add(out.inputs, rec.obj("dashboard", dashboard_id))
    report_id = report.get("id") or rec.started()
    if isinstance(report_id, str) and not report:
        fetched = rec.fetch(f"report {report_id}", lambda client: client.call(_endpoints().get_report(report_id)))
        report = dict(fetched or {})
    written = rec.obj("report", report_id)
    _add(out.outputs, written)
    if written is not None:
        out.ids["report_id"] = written.id
    _job_state(out, report)
    out.details["format"] = report.get("format", rec.operator.format)


def _download_report(rec: TaskRecord, out: TaskLineage) -> None:
    report = rec.obj("report", rec.operator.report_id)
    _add(out.inputs, report)
    if report is not None:
        out.ids["report_id"] = report.id
    _file(out.outputs, rec.returned())


def _job_state(out: TaskLineage, resource: Mapping[str, Any]) -> None:
    if resource.get("status") is not None:
        out.status = str(resource["status"])
    if resource.get("error"):
        out.details["error"] = bounded(resource["error"])


def _endpoints() -> Any:
    from airflow_provider_analytics.wire import _endpoints as endpoints

    return endpoints


OPERATIONS: dict[str, Callable[[TaskRecord, TaskLineage], None]] = {
    "connect_data_source": _connect_data_source,
    "create_chart": _create_chart,
    "get_chart_data": _get_chart_data,
    "dashboard": _dashboard,
    "create_workflow": _create_workflow,
    "apply_definitions": _apply_definitions,
    "execute_workflow": _execute_workflow,
    "generate_report": _generate_report,
    "download_report": _download_report,
}


def task_lineage(operator: Any, task_instance: Any, operation: str, *, failed: bool = False) -> TaskLineage:
    """What ``operator`` read and wrote, from what it left behind and at most a couple of extra calls.

    :param operator: the operator that ran.
    :param task_instance: its task instance.
    :param operation: one of :data:`OPERATIONS`.
    :param failed: the task failed.
    :raises KeyError: an unknown operation (a bug in the caller).
    """
    build = OPERATIONS[operation]
    record = TaskRecord(operator, task_instance, failed=failed)
    lineage = TaskLineage(operation=operation, platform=f"analytics://{record.host}")
    build(record, lineage)
    lineage.gaps.extend(record.gaps)
    return lineage
