"""``AnalyticsHook`` (blocking, for operators and ``@task`` code) and ``AnalyticsAsyncHook`` (for triggers).

A hook builds its connection's client and sends through it: each public method builds one ``Call``
(``wire/_endpoints.py``) and hands it to :meth:`AnalyticsHook.call`, the client's ``call``, the one way a request
leaves the provider. A read of work waited on goes through :meth:`AnalyticsHook.rereading`, which reads the
connection again after a refused token (``hooks/_reread.py``).

Cheap to import, as every DAG file using an operator does at each parse: the wire layer (client, transports,
limiter, request builders) comes with ``hooks._sending`` on a hook's first use, and ``AnalyticsAsyncHook`` on
first lookup.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from airflow_provider_analytics import hooks  # its _sending: what the methods send with, loaded on first use
from airflow_provider_analytics.hooks.base import DEFAULT_CONN_ID, AnalyticsBaseHook

if TYPE_CHECKING:
    from airflow_provider_analytics.definitions import AppliedPlan, Plan
    from airflow_provider_analytics.definitions._files import DefinitionsSource
    from airflow_provider_analytics.destinations import DownloadResult
    from airflow_provider_analytics.hooks._reread import TokenRefusals
    from airflow_provider_analytics.hooks.async_analytics import AnalyticsAsyncHook
    from airflow_provider_analytics.wire._calls import Call
    from airflow_provider_analytics.wire._models import (
        Chart,
        Dashboard,
        DataSource,
        Execution,
        LayoutItem,
        Report,
        SyncState,
        Workflow,
    )
    from airflow_provider_analytics.wire._pagination import ChartRows, SyncPager
    from airflow_provider_analytics.wire.client import AnalyticsClient

__all__ = ["DEFAULT_CONN_ID", "AnalyticsAsyncHook", "AnalyticsHook"]

T = TypeVar("T")


def __getattr__(name: str) -> Any:
    """``AnalyticsAsyncHook``, imported on first lookup (it brings Airflow's async connection lookup).

    :param name: the attribute looked up on this module.
    :raises AttributeError: for any other name.
    """
    if name != "AnalyticsAsyncHook":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from airflow_provider_analytics.hooks.async_analytics import AnalyticsAsyncHook

    return AnalyticsAsyncHook


class AnalyticsHook(AnalyticsBaseHook):
    """Blocking hook for the Analytics Platform /v1 API.

    Every method returns plain JSON-compatible dicts and raises the
    :mod:`~airflow_provider_analytics.wire.errors` tree. Every POST carries an ``Idempotency-Key`` (a fresh
    one when the caller gives none), so retries of any call are safe.

    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    # The connection form for Airflow before 3.2, which reads it from the registered hook class's own
    # __dict__; generated from the provider info that 3.2 and later read (connection/_form.py).

    @classmethod
    def get_connection_form_widgets(cls) -> dict[str, Any]:
        """The extra fields of the connection form (``conn-fields`` of the provider info) as wtforms fields."""
        from airflow_provider_analytics.connection._form import connection_form_widgets

        return connection_form_widgets(cls.conn_type)

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """Hidden, relabelled and placeholder fields of the connection form (``ui-field-behaviour``)."""
        from airflow_provider_analytics.connection._form import field_behaviour

        return field_behaviour(cls.conn_type)

    @cached_property
    def connection(self) -> Any:
        """The Airflow connection (looked up once per hook)."""
        return self.get_connection(self.analytics_conn_id)

    @cached_property
    def client(self) -> AnalyticsClient:
        """The configured client, built on first use."""
        conn = self.connection
        store = hooks._sending.store_connection(conn, self.get_connection)  # the rate limit store, when named
        return hooks._sending.AnalyticsClient(hooks._sending.masked_config(conn, store))

    @property
    def ui_url(self) -> str | None:
        """The platform UI's base URL (the ``ui_url`` extra), for links; ``None`` when unset."""
        return hooks._sending.ui_url_of(self.connection)

    def get_conn(self) -> AnalyticsClient:
        """Return the configured :class:`~airflow_provider_analytics.wire.client.AnalyticsClient`."""
        return self.client

    def call(self, call: Call[T]) -> T:
        """Send one request built in ``wire/_endpoints.py`` with the current client (the client's ``call``).

        :param call: the request and the parser of its answer.
        """
        return self.client.call(call)

    def rereading(self, operation: Callable[[AnalyticsHook], T], refusals: TokenRefusals) -> T:
        """``operation(self)``, a read of work waited on; when the token is refused and the connection, read again,
        changed, once more with it. A refusal right after that re-read is final (``hooks/_reread.py``).

        :param operation: the read, given this hook.
        :param refusals: the wait's memory of its re-reads, and the logger that says when one is used.
        """
        try:
            result = operation(self)
        except hooks._sending.UnauthenticatedError:
            if not refusals.worth_rereading(time.monotonic()) or not self.reload_connection():
                raise
            refusals.reread(time.monotonic())
            result = operation(self)
        refusals.answered()
        return result

    def reload_connection(self) -> bool:
        """Read the connection again; when it changed (a rotated token), later calls use a new client.

        :return: whether anything changed.
        """
        fresh = self.get_connection(self.analytics_conn_id)
        store = hooks._sending.store_connection(fresh, self.get_connection)
        if "client" in self.__dict__ and self.client.config == hooks._sending.masked_config(fresh, store):
            return False
        self.close()
        self.__dict__["connection"] = fresh
        return True

    def close(self) -> None:
        """Close the client's connection pool, if one was opened."""
        if "client" in self.__dict__:
            self.client.close()
            del self.__dict__["client"]

    def __enter__(self) -> AnalyticsHook:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # Charts ---------------------------------------------------------------------------------------------

    def list_charts(self) -> list[Chart]:
        """List the workspace's charts."""
        return self.call(hooks._sending.endpoints.list_charts())

    def create_chart(
        self,
        name: str,
        type: str,
        data_source_id: str,
        query: str,
        options: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Chart:
        """Create a chart.

        :param name: display name.
        :param type: one of ``line bar area pie table number scatter``.
        :param data_source_id: the data source the query runs on.
        :param query: the chart's query.
        :param options: drawing options.
        :param idempotency_key: makes a repeat of this call return the first chart instead of a second one.
        """
        hooks._sending.register_secrets(options)  # before it is sent: a platform may echo it back (wire/_redaction.py)
        return self.call(
            hooks._sending.endpoints.create_chart(name, type, data_source_id, query, options, idempotency_key)
        )

    def iter_chart_data(self, chart_id: str, page_size: int = 100) -> ChartRows:
        """Iterate a chart's rows lazily across pages; ``.columns`` is set once the first page arrives.

        :param chart_id: the chart's id.
        :param page_size: rows per request (1-100).
        """
        return hooks._sending.ChartRows(self.client.paginate(hooks._sending.endpoints.chart_data(chart_id, page_size)))

    # Workflows ------------------------------------------------------------------------------------------

    def list_workflows(self, page_size: int = 100) -> SyncPager[Workflow]:
        """Iterate all workflows lazily (``for workflow in hook.list_workflows()``).

        :param page_size: workflows per request (1-100).
        """
        return self.client.paginate(hooks._sending.endpoints.list_workflows(page_size))

    def create_workflow(
        self,
        name: str,
        configuration: Mapping[str, Any],
        description: str | None = None,
        idempotency_key: str | None = None,
    ) -> Workflow:
        """Create a workflow.

        :param name: display name.
        :param configuration: the workflow definition (an object).
        :param description: optional description.
        :param idempotency_key: makes a repeat of this call return the first workflow.
        """
        hooks._sending.register_secrets(configuration)
        return self.call(hooks._sending.endpoints.create_workflow(name, configuration, description, idempotency_key))

    def execute_workflow(
        self, workflow_id: str, inputs: Mapping[str, Any] | None = None, idempotency_key: str | None = None
    ) -> Execution:
        """Start an execution; returns it ``queued``.

        :param workflow_id: the workflow's id.
        :param inputs: the execution's inputs.
        :param idempotency_key: the same key within 24 h returns the first execution instead of starting one.
        """
        hooks._sending.register_secrets(inputs)
        return self.call(hooks._sending.endpoints.execute_workflow(workflow_id, inputs, idempotency_key))

    def get_execution(self, workflow_id: str, execution_id: str) -> Execution:
        """Fetch an execution's current state.

        :param workflow_id: the workflow's id.
        :param execution_id: the execution's id.
        """
        return self.call(hooks._sending.endpoints.get_execution(workflow_id, execution_id))

    def cancel_execution(self, workflow_id: str, execution_id: str) -> Execution:
        """Cancel a queued or running execution (409 :class:`ConflictError` when it already finished).

        :param workflow_id: the workflow's id.
        :param execution_id: the execution's id.
        """
        return self.call(hooks._sending.endpoints.cancel_execution(workflow_id, execution_id))

    # Data sources ---------------------------------------------------------------------------------------

    def list_data_sources(self) -> list[DataSource]:
        """List the workspace's data sources (secret connection fields are never returned)."""
        return self.call(hooks._sending.endpoints.list_data_sources())

    def connect_data_source(
        self, name: str, type: str, connection: Mapping[str, Any], idempotency_key: str | None = None
    ) -> DataSource:
        """Connect a data source.

        :param name: display name.
        :param type: the source's type (``postgres``, ``bigquery``, ...).
        :param connection: connection settings; secret fields are write-only.
        :param idempotency_key: makes a repeat of this call return the first data source.
        """
        hooks._sending.register_secrets(connection)
        return self.call(hooks._sending.endpoints.connect_data_source(name, type, connection, idempotency_key))

    def get_sync_status(self, data_source_id: str) -> SyncState:
        """Fetch a data source's sync status.

        :param data_source_id: the data source's id.
        """
        return self.call(hooks._sending.endpoints.get_sync_status(data_source_id))

    # Dashboards -----------------------------------------------------------------------------------------

    def list_dashboards(self, page_size: int = 100) -> SyncPager[Dashboard]:
        """Iterate all dashboards lazily.

        :param page_size: dashboards per request (1-100).
        """
        return self.client.paginate(hooks._sending.endpoints.list_dashboards(page_size))

    def create_dashboard(
        self,
        name: str,
        description: str | None = None,
        tags: Sequence[str] | None = None,
        layout: Sequence[LayoutItem] | None = None,
        idempotency_key: str | None = None,
    ) -> Dashboard:
        """Create a dashboard (``version`` 1).

        :param name: display name.
        :param description: optional description.
        :param tags: optional tags.
        :param layout: chart placements; every chart must exist.
        :param idempotency_key: makes a repeat of this call return the first dashboard.
        """
        return self.call(hooks._sending.endpoints.create_dashboard(name, description, tags, layout, idempotency_key))

    def update_dashboard(
        self,
        dashboard_id: str,
        name: str,
        description: str | None = None,
        tags: Sequence[str] | None = None,
        layout: Sequence[LayoutItem] | None = None,
        if_match: int | None = None,
    ) -> Dashboard:
        """Replace a dashboard's name, description, tags and layout.

        :param dashboard_id: the dashboard's id.
        :param name: display name.
        :param description: description (empty when ``None``).
        :param tags: tags (none when ``None``).
        :param layout: chart placements (none when ``None``).
        :param if_match: the ``version`` you read; a newer one on the platform raises
            :class:`PreconditionFailedError` instead of overwriting someone else's change. A 412 to a repeat of
            this very update (its first answer was lost, or the task is retried) is not a conflict: when the
            dashboard stands at ``if_match + 1`` holding exactly this update, that dashboard is returned
            (one listing of the dashboards to read it; :mod:`~airflow_provider_analytics.wire._conditional`).
        """
        update = hooks._sending.endpoints.update_dashboard(dashboard_id, name, description, tags, layout, if_match)
        return hooks._sending.send_update(self, update, dashboard_id, self.log)

    # Reports --------------------------------------------------------------------------------------------

    def list_reports(self) -> list[Report]:
        """List the workspace's reports."""
        return self.call(hooks._sending.endpoints.list_reports())

    def generate_report(
        self,
        dashboard_ids: Sequence[str],
        format: str = "pdf",
        name: str | None = None,
        parameters: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Report:
        """Start generating a report; returns it ``pending``.

        :param dashboard_ids: the dashboards to include (at least one).
        :param format: one of ``pdf csv xlsx html``.
        :param name: the report's name (also the downloaded file's name).
        :param parameters: report parameters.
        :param idempotency_key: the same key within 24 h returns the first report instead of a new one.
        """
        hooks._sending.register_secrets(parameters)
        return self.call(
            hooks._sending.endpoints.generate_report(dashboard_ids, format, name, parameters, idempotency_key)
        )

    def get_report(self, report_id: str) -> Report:
        """Fetch a report's current state.

        :param report_id: the report's id.
        """
        return self.call(hooks._sending.endpoints.get_report(report_id))

    def cancel_report(self, report_id: str) -> Report:
        """Stop generating a report; it ends ``failed`` (409 :class:`ConflictError` when it already finished).

        :param report_id: the report's id.
        """
        return self.call(hooks._sending.endpoints.cancel_report(report_id))

    def download_report(
        self,
        report_id: str,
        destination: Any,
        overwrite: bool = False,
        *,
        report: Mapping[str, Any] | None = None,
        keep_identical: bool = False,
    ) -> DownloadResult:
        """Stream a ready report to a local path or an ``ObjectStoragePath`` URI, verified before it appears.

        :param report_id: the report's id.
        :param destination: a file path or URI, or a folder (ending in ``/``: the platform's file name,
            made safe, is used inside it when its extension matches the content type, else
            ``<report_id>.<ext>``); or the destination ``DownloadReportOperator`` already parsed in this task
            step, which is not parsed again.
        :param overwrite: replace an existing file; without it an existing target fails before downloading.
        :param report: the report as last fetched (``get_report``); its ``size_bytes`` and ``sha256`` then
            bound and check the file as well.
        :param keep_identical: without ``overwrite``, an existing target with exactly ``report``'s size and
            sha-256 is kept and returned (``kept=True``) instead of refused; needs ``report``.
        """
        from airflow_provider_analytics.destinations._download import download_report_to

        return download_report_to(
            self.client, report_id, destination, overwrite=overwrite, report=report, keep_identical=keep_identical
        )

    # Definitions kept as code (docs/guides/apply-definitions.md) ------------------------------------------

    def plan_definitions(self, definitions: DefinitionsSource) -> Plan:
        """What applying ``definitions`` would change, per object; checked in full before any request, then four
        listings (one per kind) and nothing else. The plan is logged as a table; ``plan.to_dict()`` is plain data.

        The plan names every secret kept in Airflow its apply would read (``plan.secrets``, and the table's last
        lines); a reference to a connection or variable the connection's ``secret_sources`` does not allow fails
        before any request.

        :param definitions: a path or glob of ``.yaml``/``.yml``/``.json`` files, a mapping with the sections
            ``data_sources``, ``charts``, ``dashboards`` and ``workflows``, or a list of those.
        """
        from airflow_provider_analytics.hooks._definitions import plan_definitions

        return plan_definitions(self.client, self.connection, definitions, self.log)

    def apply_plan(self, plan: Plan, key_seed: str | None = None) -> AppliedPlan:
        """Send a plan's creates and updates in dependency order; unchanged objects get no request. Refused before
        any write while the plan has ``cannot_apply`` objects; a dashboard edited since the plan read it raises
        :class:`~airflow_provider_analytics.wire.errors.PreconditionFailedError` instead of being overwritten.

        :param plan: from :meth:`plan_definitions`, in this process.
        :param key_seed: what the creates' ``Idempotency-Key`` derive from: a repeat of this apply under the same
            seed within the platform's 24 hours gets the first creates' answers back instead of new objects. Name
            the task instance whose retries may repeat it (``ApplyDefinitionsOperator`` passes DAG, task, run and
            map index), never something a later run shares. Default: a seed unique to this call, so nothing is
            replayed (a retry of the calling task then creates what its plan still lists as new).
        :raises AnalyticsInputError: a secret kept in Airflow (``from_connection`` or ``from_variable``) names a
            connection or variable the connection's ``secret_sources`` does not allow, or one, or a field, that is
            not there (before any write).
        """
        from airflow_provider_analytics.hooks._definitions import apply_plan

        return apply_plan(self.client, self.connection, plan, key_seed, self.log)

    def export_definitions(
        self, kinds: Sequence[str] | None = None, names: Sequence[str] | None = None
    ) -> dict[str, list[dict[str, Any]]]:
        """The workspace's objects as definitions (one mapping of the shape :meth:`plan_definitions` reads), so
        that planning them against this workspace changes nothing; four listings, nothing else. Secrets are never
        in it: each is a ``from_connection`` or ``from_variable`` reference to fill in, and a value in a
        reference's shape is the literal ``{$literal: ...}``. What a person should know
        (names the platform shares, exported with their ``id``; references to create; secrets left out) is logged
        at WARNING. The guide: docs/guides/export-definitions.md.

        :param kinds: which sections: ``data_sources``, ``charts``, ``dashboards``, ``workflows`` (default: all).
        :param names: only the objects of these names (default: every object).
        :raises AnalyticsInputError: ``kinds`` or ``names`` malformed (before any request), or a name no object has.
        """
        from airflow_provider_analytics.hooks._definitions import export_definitions

        return export_definitions(self.client, self.connection, kinds, names, self.log)

    def test_connection(self) -> tuple[bool, str]:
        """Make one cheap authenticated call and say what to change if it fails; never raises, never shows the
        token (``connection/_probe.py``)."""
        from airflow_provider_analytics.connection._probe import probe_connection

        return probe_connection(self.analytics_conn_id, lambda: self.connection, self.get_connection)
