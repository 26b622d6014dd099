"""Every decision the published API reference leaves open, in one place.

The values here follow ``shared/CONTRACT.md`` (see ``docs/api-contract.md``). If the real platform differs,
this module and the endpoint table in :mod:`airflow_provider_analytics.wire._endpoints` are what change.
"""

from __future__ import annotations

import re
from enum import Enum

API_PREFIX = "/v1"
ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
IDEMPOTENCY_KEY_PATTERN = re.compile(r"^[\x21-\x7e]{1,255}$")
MAX_PAGE_SIZE = 100
# The shortest wait between two polls of the same resource, for tasks and triggers alike.
MIN_POLL_INTERVAL = 0.1
# A listing longer than this is taken to be a platform bug (1,000,000 chart rows at 100 a page).
MAX_PAGES = 10_000
MAX_REQUEST_BODY_BYTES = 1024 * 1024

HEADER_REQUEST_ID = "X-Request-Id"
HEADER_WORKSPACE = "X-Workspace-Id"
HEADER_IDEMPOTENCY_KEY = "Idempotency-Key"
HEADER_REPR_DIGEST = "Repr-Digest"
LIFECYCLE_HEADERS = ("Deprecation", "Sunset")


class ExecutionStatus(str, Enum):
    """States of a workflow execution: ``queued -> running -> succeeded | failed | cancelled``."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


EXECUTION_TERMINAL = frozenset({ExecutionStatus.SUCCEEDED, ExecutionStatus.FAILED, ExecutionStatus.CANCELLED})


class ReportStatus(str, Enum):
    """States of a report: ``pending -> generating -> ready | failed``, then ``ready -> expired``."""

    PENDING = "pending"
    GENERATING = "generating"
    READY = "ready"
    FAILED = "failed"
    EXPIRED = "expired"


class SyncStatus(str, Enum):
    """States of a data source sync. Freshness (``last_synced_at``), not status, says data is ready."""

    NEVER_SYNCED = "never_synced"
    PENDING = "pending"
    SYNCING = "syncing"
    SYNCED = "synced"
    FAILED = "failed"


class ReportFormat(str, Enum):
    """File formats a report can be generated in."""

    PDF = "pdf"
    CSV = "csv"
    XLSX = "xlsx"
    HTML = "html"


class ChartType(str, Enum):
    """Chart types the platform draws."""

    LINE = "line"
    BAR = "bar"
    AREA = "area"
    PIE = "pie"
    TABLE = "table"
    NUMBER = "number"
    SCATTER = "scatter"


# Paths the published reference does not list; kept here so a different real platform is one edit.
ASSUMED_ROUTES = {
    "get_execution": "/workflows/{workflow_id}/executions/{execution_id}",
    "cancel_execution": "/workflows/{workflow_id}/executions/{execution_id}/cancel",
    "get_report": "/reports/{report_id}",
    "cancel_report": "/reports/{report_id}/cancel",
}
