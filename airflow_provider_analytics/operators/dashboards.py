"""Create and update dashboards, including dashboards kept as code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics import operators  # its _runtime: what a task uses once it runs
from airflow_provider_analytics.operators._common import (
    AnalyticsBaseOperator,
    check_templated,
    task_instance_key,
    task_step,
)
from airflow_provider_analytics.operators.links import DashboardLink

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

    from airflow_provider_analytics.wire._models import LayoutItem

__all__ = ["CreateDashboardOperator", "UpdateDashboardOperator"]


class _DashboardOperator(AnalyticsBaseOperator):
    template_fields: Sequence[str] = ("name", "description", "tags", "layout")
    template_fields_renderers = {"layout": "json"}
    operator_extra_links = (DashboardLink(),)

    def __init__(
        self,
        *,
        name: str,
        description: str | None = None,
        tags: Sequence[str] | None = None,
        layout: Sequence[LayoutItem] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.name = name
        self.description = description
        self.tags = tags
        self.layout = layout

    def _check_templated(self) -> None:
        # A string of tags is most likely a list written as text; the endpoint's own message says so.
        check_templated(self.layout, "layout", "list")

    def _publish(self, context: Context, dashboard: Any) -> dict[str, Any]:
        # The answer's id goes to XCom, the link and the log: only once it is an id (the platform's shape).
        dashboard_id = operators._runtime.answered_id(dashboard.get("id"), f"id of dashboard {self.name!r}")
        context["ti"].xcom_push(key="dashboard_id", value=dashboard_id)
        self.publish_link(context, DashboardLink, f"dashboards/{dashboard_id}")
        self.log.info("Dashboard %s (%s) is at version %s", dashboard_id, self.name, dashboard.get("version"))
        return dict(dashboard)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the charts of the layout read, the dashboard written (docs/lineage.md).

        :param task_instance: the finished task instance.
        """
        return operators._runtime.lineage_for(self, task_instance, "dashboard")


class CreateDashboardOperator(_DashboardOperator):
    """Create a dashboard; returns it. A retried task gets the first creation back instead of a duplicate.

    With ``update_existing=True`` it keeps a dashboard *as code*: when exactly one dashboard already has
    this name it is replaced with this definition (guarded by ``If-Match`` on the version just read, so a
    concurrent edit is never overwritten silently); otherwise one is created.

    :param name: the dashboard's name (templated).
    :param description: description (templated).
    :param tags: tags (templated).
    :param layout: chart placements ``{"chart_id", "x", "y", "w", "h"}``; the charts must exist (templated).
    :param update_existing: update the dashboard of the same name instead of creating another.
    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    def __init__(self, *, update_existing: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.update_existing = update_existing

    @task_step
    def execute(self, context: Context) -> dict[str, Any]:
        self.pushed_links = {}  # a try starts in this process: it has pushed no link yet

        self._check_templated()
        operators._runtime.endpoints.create_dashboard(
            self.name, self.description, self.tags, self.layout
        )  # validates, sends nothing
        if self.update_existing:
            same_name = [item for item in self.hook.list_dashboards() if item.get("name") == self.name]
            if len(same_name) > 1:
                ids = ", ".join(str(item.get("id")) for item in same_name)
                raise operators._runtime.AnalyticsInputError(
                    f"{len(same_name)} dashboards are named {self.name!r} ({ids}): use UpdateDashboardOperator "
                    "with the dashboard_id to update one of them"
                )
            if same_name:
                current = same_name[0]
                dashboard = self.hook.update_dashboard(
                    current["id"], self.name, self.description, self.tags, self.layout, if_match=current.get("version")
                )
                return self._publish(context, dashboard)
        dashboard = self.hook.create_dashboard(
            self.name, self.description, self.tags, self.layout, idempotency_key=task_instance_key(context, "dashboard")
        )
        return self._publish(context, dashboard)


class UpdateDashboardOperator(_DashboardOperator):
    """Replace a dashboard's name, description, tags and layout; returns the new version.

    :param dashboard_id: the dashboard (templated).
    :param if_match: the version you expect it to be at (templated); a newer one fails the task with
        ``PreconditionFailedError`` instead of overwriting someone else's change.
    :param name: the dashboard's name (templated).
    :param description: description (templated).
    :param tags: tags (templated).
    :param layout: chart placements (templated).
    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    template_fields: Sequence[str] = ("dashboard_id", "if_match", *_DashboardOperator.template_fields)

    def __init__(self, *, dashboard_id: str, if_match: int | str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dashboard_id = dashboard_id
        self.if_match = if_match

    @task_step
    def execute(self, context: Context) -> dict[str, Any]:
        self.pushed_links = {}  # a try starts in this process: it has pushed no link yet
        self._check_templated()
        version: Any = self.if_match
        if isinstance(version, str):
            # A rendered template arrives as text; anything not a whole number is refused by the hook.
            version = int(version) if version.strip().isdigit() else (version.strip() or None)
        dashboard = self.hook.update_dashboard(
            self.dashboard_id, self.name, self.description, self.tags, self.layout, if_match=version
        )
        return self._publish(context, dashboard)
