"""What a task uses once it runs and a DAG file never needs: the one seam between the DAG-parse path and the
layers below it.

Airflow imports a DAG file at every parse, and with it the operator and sensor modules: they hold configuration
(parameters, template fields, links, which kind of work) and import at module level only what a class statement
needs. Everything their tasks use when they run is imported here, at module level, and reached from them as
``operators._runtime.<name>``: the descriptions of remote work and their triggers (paired in
:data:`TRIGGER_FOR_JOB`), the event contract, the task failures, the client's errors and the request checks,
destinations, lineage and the definitions' labels. The ``operators`` package imports this module on the first
such lookup, in the task's process (``operators/__init__.py``); ``tests/test_import_cost.py`` checks that parsing
a DAG file loads none of it. The price: a task's first lookup loads all of it, the parts its operator never uses
too (a few tens of milliseconds on a worker that is about to send requests anyway). The hook's own module is on
the parse path and builds its client on first use (``hooks/``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow.providers.common.compat.sdk import Asset

from airflow_provider_analytics._jobs.events import checked_event, failure_message, from_earlier_try, try_number_of
from airflow_provider_analytics._jobs.executions import ExecutionJob
from airflow_provider_analytics._jobs.pauses import ends_past, past_deadline, pause_now
from airflow_provider_analytics._jobs.reports import ReportJob
from airflow_provider_analytics._jobs.syncs import SyncJob
from airflow_provider_analytics.definitions._export import checked_filters
from airflow_provider_analytics.definitions._export_files import SPLITS, definition_files, written_by_an_export
from airflow_provider_analytics.definitions._files import MAX_FILE_BYTES
from airflow_provider_analytics.definitions._model import LABELS, SECTIONS
from airflow_provider_analytics.definitions._problems import one_line
from airflow_provider_analytics.definitions._review import check_reviewed, moved_since
from airflow_provider_analytics.destinations._atomic import write_atomically
from airflow_provider_analytics.destinations._export_folder import survey, write_beneath
from airflow_provider_analytics.destinations._target import Destination, refuse_existing
from airflow_provider_analytics.hooks._metrics import waiting, work_ended
from airflow_provider_analytics.lineage._recording import STARTED, keep
from airflow_provider_analytics.lineage._safe_entry import lineage_for
from airflow_provider_analytics.operators.errors import (
    DefinitionsDrifted,
    FinalFailure,
    RemoteJobFailed,
    RemoteJobTimeout,
    RemoteWaitError,
    RequestChangedBetweenTries,
    ReviewedPlanMoved,
    why_final,
)
from airflow_provider_analytics.sensors._poking import poke_then_defer, poke_under_pauses, reschedule_after_pause
from airflow_provider_analytics.triggers.data_sources import DataSourceSyncTrigger
from airflow_provider_analytics.triggers.executions import ExecutionTrigger
from airflow_provider_analytics.triggers.reports import ReportTrigger
from airflow_provider_analytics.version_compat import link_url, link_xcom_key
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._contract import ExecutionStatus
from airflow_provider_analytics.wire._deadline import LAST_LOOK_SECONDS, call_deadline
from airflow_provider_analytics.wire._ids import answered_id, validate_id, validate_page_size
from airflow_provider_analytics.wire._names import one_of, resolve_name
from airflow_provider_analytics.wire._progress import TransferProgress
from airflow_provider_analytics.wire._redaction import scrub_text
from airflow_provider_analytics.wire._times import parse_time
from airflow_provider_analytics.wire.errors import (
    TRANSIENT_ERRORS,
    AnalyticsError,
    AnalyticsInputError,
    ConflictError,
    RateLimitedError,
    clean_text,
)

if TYPE_CHECKING:
    from airflow_provider_analytics._jobs.base import RemoteJob
    from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger

__all__ = [
    "LABELS",
    "LAST_LOOK_SECONDS",
    "MAX_FILE_BYTES",
    "SECTIONS",
    "SPLITS",
    "STARTED",
    "TRANSIENT_ERRORS",
    "TRIGGER_FOR_JOB",
    "AnalyticsError",
    "AnalyticsInputError",
    "Asset",
    "ConflictError",
    "DataSourceSyncTrigger",
    "DefinitionsDrifted",
    "Destination",
    "ExecutionJob",
    "ExecutionStatus",
    "ExecutionTrigger",
    "FinalFailure",
    "RateLimitedError",
    "RemoteJobFailed",
    "RemoteJobTimeout",
    "RemoteWaitError",
    "ReportJob",
    "ReportTrigger",
    "RequestChangedBetweenTries",
    "ReviewedPlanMoved",
    "SyncJob",
    "TransferProgress",
    "answered_id",
    "call_deadline",
    "check_reviewed",
    "checked_event",
    "checked_filters",
    "clean_text",
    "definition_files",
    "endpoints",
    "ends_past",
    "failure_message",
    "from_earlier_try",
    "keep",
    "lineage_for",
    "link_url",
    "link_xcom_key",
    "moved_since",
    "one_line",
    "one_of",
    "parse_time",
    "past_deadline",
    "pause_now",
    "poke_then_defer",
    "poke_under_pauses",
    "refuse_existing",
    "reschedule_after_pause",
    "resolve_name",
    "scrub_text",
    "survey",
    "try_number_of",
    "validate_id",
    "validate_page_size",
    "waiting",
    "why_final",
    "work_ended",
    "write_atomically",
    "write_beneath",
    "written_by_an_export",
]

# The trigger a deferred task waits in, for each description of work: the job operators and the download operator
# defer through it (``RemoteWaitOperator.make_trigger``); each trigger builds its description back from its kwargs.
TRIGGER_FOR_JOB: dict[type[RemoteJob], type[AnalyticsPollTrigger]] = {
    ExecutionJob: ExecutionTrigger,
    ReportJob: ReportTrigger,
    SyncJob: DataSourceSyncTrigger,
}
