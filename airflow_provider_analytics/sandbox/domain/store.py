"""The sandbox's state: workspaces and their records, the request log, and the controls tests use.

One re-entrant lock guards the records: routes run on the server's event-loop thread while tests
call these controls from their own thread.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from datetime import datetime

from airflow_provider_analytics.sandbox.domain import lifecycle
from airflow_provider_analytics.sandbox.domain.clock import SandboxClock
from airflow_provider_analytics.sandbox.domain.config import SandboxConfig, Timings
from airflow_provider_analytics.sandbox.domain.idempotency import IdempotencyStore
from airflow_provider_analytics.sandbox.domain.pagination import CursorCodec
from airflow_provider_analytics.sandbox.domain.rate_limits import RateLimits, RateLimitStats
from airflow_provider_analytics.sandbox.domain.records import (
    DataSourceRecord,
    JsonDict,
    WorkflowRecord,
    Workspace,
)
from airflow_provider_analytics.sandbox.domain.request_log import RecordedRequest, RequestLog
from airflow_provider_analytics.sandbox.domain.seed import seed_workspace
from airflow_provider_analytics.sandbox.domain.tokens import TokenBook
from airflow_provider_analytics.sandbox.faults.chaos import Chaos, InjectedFaults
from airflow_provider_analytics.sandbox.faults.kinds import Fault
from airflow_provider_analytics.sandbox.faults.queue import FaultQueue

__all__ = ["RecordedRequest", "SandboxState"]

DEFAULT_DEPRECATION = "@1767225600"
DEFAULT_SUNSET = "Wed, 01 Jul 2027 00:00:00 GMT"


class SandboxState:
    """Records, clock, faults and request log of one sandbox, plus the controls tests call.

    :param config: the sandbox configuration.
    """

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        self.timings = config.timings
        self.clock = SandboxClock()
        self.lock = threading.RLock()
        self.faults = FaultQueue()
        self.chaos = Chaos(config.chaos)
        self.injected = InjectedFaults()
        self.tokens = TokenBook(config.tokens)
        self.idempotency = IdempotencyStore()
        self.rate_limits = RateLimits(
            config.rate_limit_per_minute, config.rate_limit_per_second, config.rate_limit_headers
        )
        self.cursors = CursorCodec(secrets.token_bytes(32))
        self._workspaces: dict[str, Workspace] = {}
        self.request_log = RequestLog()
        self._execution_outcomes: dict[str, tuple[str, JsonDict | None]] = {}
        self._report_outcome = "ready"
        self._deprecations: list[tuple[str, str, str]] = []
        self._auto_sync_anchor = self.clock.now()
        self.reset()

    # --- controls -------------------------------------------------------------------------------

    def reset(self) -> None:
        """Wipe every record and re-seed; clear faults, the request log, outcomes and the clock offset.

        Rotated tokens are forgotten and the chaos streams start over from their seed. The rate limits go
        back to the configuration's, with no counts.
        """
        with self.lock:
            self.timings = self.config.timings
            self.clock.reset()
            self.faults.clear()
            self.chaos.reset()
            self.injected.clear()
            self.tokens.reset()
            self.idempotency.clear()
            self.rate_limits.reset()
            self.request_log.clear()
            self._execution_outcomes.clear()
            self._report_outcome = "ready"
            self._deprecations.clear()
            now = self.clock.now()
            self._auto_sync_anchor = now
            self._workspaces = {workspace_id: Workspace(workspace_id) for workspace_id in self.config.workspace_ids}
            if self.config.seed:
                for workspace in self._workspaces.values():
                    seed_workspace(workspace, now, self.timings)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of every ``/v1`` request received since the last reset, in arrival order."""
        return self.request_log.snapshot()

    def inject(self, *faults: Fault) -> None:
        """Queue faults; they are consumed in injection order by matching requests.

        :param faults: the faults to queue.
        """
        for fault in faults:
            self.faults.add(fault)

    def now(self) -> datetime:
        """The current sandbox time."""
        return self.clock.now()

    def advance(self, seconds: float) -> None:
        """Move the sandbox clock forward; every state machine follows.

        :param seconds: how far to move.
        """
        self.clock.advance(seconds)

    def set_timings(self, timings: Timings) -> None:
        """Change how long every state takes, for records old and new, until the next :meth:`reset`.

        :param timings: the new timings (``Timings.fast()``, ``Timings.demo()``, or a custom one).
        """
        with self.lock:
            self.timings = timings

    def set_rate_limit(self, per_second: float | None, headers: bool = True) -> None:
        """Change the per-token limit per second and the ``X-RateLimit-*`` switch, until the next :meth:`reset`.

        :param per_second: requests per second per token, over 0 (a fraction allowed); None: no such limit.
        :param headers: whether responses carry ``X-RateLimit-Limit/Remaining/Reset`` (429s keep ``Retry-After``).
        :raises ValueError: ``per_second`` is not a finite number over 0 or None.
        """
        self.rate_limits.configure(per_second, headers)

    def rate_limit_stats(self) -> RateLimitStats:
        """``{"per_second", "headers", "allowed", "refused"}``: the per-second limit and what it let through."""
        return self.rate_limits.stats()

    def set_execution_outcome(self, workflow_id: str, outcome: str, error: str | JsonDict | None = None) -> None:
        """Decide how future executions of a workflow end.

        :param workflow_id: the workflow (need not exist yet).
        :param outcome: ``succeeded`` or ``failed``.
        :param error: for ``failed``: the error message, or a full ``{"type", "message"}`` dict.
        """
        if outcome not in ("succeeded", "failed"):
            raise ValueError(f"outcome must be 'succeeded' or 'failed', not {outcome!r}")
        error_dict = {"type": "step_failed", "message": error} if isinstance(error, str) else error
        with self.lock:
            self._execution_outcomes[workflow_id] = (outcome, error_dict)

    def set_report_outcome(self, outcome: str) -> None:
        """Decide how future reports end.

        :param outcome: ``ready`` or ``failed``.
        """
        if outcome not in ("ready", "failed"):
            raise ValueError(f"outcome must be 'ready' or 'failed', not {outcome!r}")
        with self.lock:
            self._report_outcome = outcome

    def start_sync(self, data_source_id: str, outcome: str = "synced", workspace_id: str | None = None) -> JsonDict:
        """Start a sync of a data source now; returns its sync status.

        :param data_source_id: the data source.
        :param outcome: ``synced`` or ``failed``.
        :param workspace_id: where to look (every workspace when None).
        """
        with self.lock:
            source = self.find_data_source(data_source_id, workspace_id)
            now = self.now()
            lifecycle.start_sync(source, self.timings, now, outcome)
            return lifecycle.sync_view(source, self.timings, now)

    def expire_report(self, report_id: str) -> None:
        """Make a report expired now (downloads answer 410 from then on).

        :param report_id: the report.
        """
        with self.lock:
            for workspace in self._workspaces.values():
                report = workspace.reports.get(report_id)
                if report is not None:
                    if report.outcome == "failed":
                        raise ValueError(f"report {report_id} failed; only a ready report can expire")
                    report.expired_at = self.now()
                    return
        raise KeyError(f"report {report_id} not found")

    def deprecate(self, path_prefix: str, deprecation: str = DEFAULT_DEPRECATION, sunset: str = DEFAULT_SUNSET) -> None:
        """Make responses to paths starting with ``path_prefix`` carry ``Deprecation`` and ``Sunset``.

        :param path_prefix: e.g. ``/v1/charts``.
        :param deprecation: the ``Deprecation`` value (RFC 9745: ``@<epoch seconds>``).
        :param sunset: the ``Sunset`` value (RFC 8594: an HTTP-date).
        """
        with self.lock:
            self._deprecations.append((path_prefix, deprecation, sunset))

    # --- readers --------------------------------------------------------------------------------

    def _each(self, workspace_id: str | None) -> Iterator[Workspace]:
        if workspace_id is None:
            yield from self._workspaces.values()
        else:
            yield self.workspace(workspace_id)

    def executions(self, workspace_id: str | None = None) -> list[JsonDict]:
        """Every execution as the API would render it now.

        :param workspace_id: only this workspace (all when None).
        """
        with self.lock:
            now = self.now()
            return [
                lifecycle.execution_view(execution, self.timings, now)
                for workspace in self._each(workspace_id)
                for execution in workspace.executions.values()
            ]

    def reports(self, workspace_id: str | None = None) -> list[JsonDict]:
        """Every report as the API would render it now.

        :param workspace_id: only this workspace (all when None).
        """
        with self.lock:
            now = self.now()
            return [
                lifecycle.report_view(report, self.timings, now)
                for workspace in self._each(workspace_id)
                for report in workspace.reports.values()
            ]

    def data_sources(self, workspace_id: str | None = None) -> list[JsonDict]:
        """Every data source as the API would render it now.

        :param workspace_id: only this workspace (all when None).
        """
        with self.lock:
            now = self.now()
            views = []
            for workspace in self._each(workspace_id):
                for source in workspace.data_sources.values():
                    self.refresh_sync(source, now)
                    views.append(lifecycle.data_source_view(source, self.timings, now))
            return views

    def dashboards(self, workspace_id: str | None = None) -> list[JsonDict]:
        """Every dashboard.

        :param workspace_id: only this workspace (all when None).
        """
        with self.lock:
            return [d.as_json() for workspace in self._each(workspace_id) for d in workspace.dashboards.values()]

    def charts(self, workspace_id: str | None = None) -> list[JsonDict]:
        """Every chart.

        :param workspace_id: only this workspace (all when None).
        """
        with self.lock:
            return [c.as_json() for workspace in self._each(workspace_id) for c in workspace.charts.values()]

    def workflows(self, workspace_id: str | None = None) -> list[JsonDict]:
        """Every workflow.

        :param workspace_id: only this workspace (all when None).
        """
        with self.lock:
            return [w.as_json() for workspace in self._each(workspace_id) for w in workspace.workflows.values()]

    # --- used by the server ---------------------------------------------------------------------

    def workspace(self, workspace_id: str) -> Workspace:
        """A workspace's records (an empty one is created for a workspace a token names but none holds).

        :param workspace_id: the workspace.
        """
        with self.lock:
            return self._workspaces.setdefault(workspace_id, Workspace(workspace_id))

    def find_data_source(self, data_source_id: str, workspace_id: str | None = None) -> DataSourceRecord:
        """A data source by id; ``KeyError`` when no (selected) workspace has it.

        :param data_source_id: the data source.
        :param workspace_id: where to look (every workspace when None).
        """
        with self.lock:
            for workspace in self._each(workspace_id):
                if data_source_id in workspace.data_sources:
                    return workspace.data_sources[data_source_id]
        raise KeyError(f"data source {data_source_id} not found")

    def refresh_sync(self, source: DataSourceRecord, now: datetime) -> None:
        """Start any scheduled (auto) sync that is due; call before rendering a data source.

        :param source: the data source.
        :param now: the sandbox time of the read.
        """
        with self.lock:
            lifecycle.apply_auto_sync(source, self.timings, self._auto_sync_anchor, now)

    def execution_outcome(self, workflow: WorkflowRecord) -> tuple[str, JsonDict | None]:
        """How a new execution of ``workflow`` will end: the override, else its ``sandbox`` configuration.

        :param workflow: the workflow being executed.
        """
        with self.lock:
            override = self._execution_outcomes.get(workflow.id)
        if override is not None:
            outcome, error = override
        else:
            sandbox_options = workflow.configuration.get("sandbox")
            outcome = "succeeded"
            if isinstance(sandbox_options, dict) and sandbox_options.get("outcome") == "failed":
                outcome = "failed"
            error = None
        if override is None and outcome == "succeeded" and self.chaos.work_fails("execution"):
            outcome, error = "failed", {"type": "chaos", "message": "the platform failed this execution (chaos)"}
        if outcome == "failed" and error is None:
            error = lifecycle.execution_error(workflow)
        return outcome, error

    @property
    def report_outcome(self) -> str:
        """How new reports end: ``ready`` or ``failed``."""
        with self.lock:
            return self._report_outcome

    def new_report_outcome(self) -> str:
        """How the report being created now ends: the set outcome, or a chaos failure among ``ready`` ones."""
        outcome = self.report_outcome
        if outcome == "ready" and self.chaos.work_fails("report"):
            return "failed"
        return outcome

    def deprecation_headers(self, path: str) -> list[tuple[str, str]]:
        """``Deprecation``/``Sunset`` headers for a response to ``path``.

        :param path: the URL path.
        """
        with self.lock:
            for prefix, deprecation, sunset in self._deprecations:
                if path.startswith(prefix):
                    return [("deprecation", deprecation), ("sunset", sunset)]
        return []
