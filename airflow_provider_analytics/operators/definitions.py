"""Keep data sources, charts, dashboards and workflows as code: plan, then apply.

The guide: :doc:`/guides/apply-definitions` (``docs/guides/apply-definitions.md`` in a checkout).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics import operators  # its _runtime: what a task uses once it runs
from airflow_provider_analytics.operators._common import AnalyticsBaseOperator, task_instance_key, task_step

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

    from airflow_provider_analytics.definitions import Plan

__all__ = ["ApplyDefinitionsOperator"]


class ApplyDefinitionsOperator(AnalyticsBaseOperator):
    """Make the platform match definitions kept as code: read what exists, plan, then change only what differs.

    The definitions are checked in full before any request (an error names the file, the object and the field).
    The plan lists per object ``create``, ``update`` (dashboards: the fields that differ), ``unchanged``,
    ``cannot_apply`` (a chart, workflow or data source that differs: the API cannot update it) and ``not_managed``
    (on the platform, named by no definition; nothing is ever deleted). It is logged as a table. Then, unless
    ``plan_only``, the writes are sent in dependency order: a create carries an ``Idempotency-Key`` derived from
    the task instance (DAG, run, task and map index, not the try number), so a retried task creates nothing twice
    while another run or mapped instance never replays this one's creates; a dashboard update carries
    ``If-Match`` with the version the plan read, so an edit made meanwhile fails the task instead of being
    overwritten, and keeps the layout items' fields the definitions do not set (a tile's title, its settings).
    A create's answer must be the object asked for (kind and name), else the task fails. A plan with a
    ``cannot_apply`` object is not applied at all, and a WARNING names those objects (with
    ``plan_only`` too). A second run with the same definitions sends only the reads.

    Returns ``{"plan": ..., "applied": ..., "links": ...}``: the plan, what was written (``None`` with
    ``plan_only``) and each created or updated dashboard's page in the platform UI (when the connection has a
    ``ui_url``).

    :param definitions: a path or glob of ``.yaml``/``.yml``/``.json`` files (relative paths are read from the
        DAG file's folder), a mapping with the sections ``data_sources``, ``charts``, ``dashboards`` and
        ``workflows``, or a list of those (templated).
    :param plan_only: stop after the plan (default ``False``).
    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    template_fields = ("definitions",)
    template_fields_renderers = {"definitions": "json"}
    ui_color = "#fef7e0"

    def __init__(
        self,
        *,
        definitions: str | PurePath | Mapping[str, Any] | Sequence[str | PurePath | Mapping[str, Any]],
        plan_only: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.definitions = definitions
        self.plan_only = plan_only

    @task_step
    def execute(self, context: Context) -> dict[str, Any]:
        plan = self.hook.plan_definitions(self._located(self.definitions))
        result: dict[str, Any] = {"plan": plan.to_dict(), "applied": None, "links": {}}
        self._warn_blocked(plan)
        if self.plan_only:
            self.log.info("plan_only=True: nothing applied")
            return result
        # Same for every try of this task instance (a retry replays the first try's creates), different for any
        # other run or mapped instance: the platform keeps keys for 24 hours, longer than one run.
        applied = self.hook.apply_plan(plan, key_seed=task_instance_key(context, "definitions"))
        result["applied"] = applied.to_dict()
        for item in applied.written:
            url = self.ui_link(f"dashboards/{item.id}") if item.kind == "dashboard" else None
            if url:
                result["links"][item.name] = url
                self.log.info("Dashboard %r (%s): %s", item.name, item.action, url)
        return result

    def _warn_blocked(self, plan: Plan) -> None:
        """One WARNING naming the plan's ``cannot_apply`` objects, whatever the mode.

        A review step (``plan_only``) succeeds with such a plan, and its table logs at INFO: without this line a
        green task would hide that the apply after it is refused.
        """
        if not plan.blocked:
            return

        named = ", ".join(
            f"{operators._runtime.LABELS[change.kind]} {operators._runtime.one_line(change.name)!r}"
            for change in plan.blocked
        )
        self.log.warning(
            "%d object(s) of the plan cannot be applied: %s. They differ from the platform's and the API has no "
            "update for them, so an apply of this plan is refused before any write; the plan's table says what "
            "to change for each",
            len(plan.blocked),
            named,
        )

    def _located(self, definitions: Any) -> Any:
        """Relative paths read from the DAG file's folder, as Airflow reads templates: a worker's working
        directory is not the DAG folder."""
        if isinstance(definitions, (list, tuple)):
            return [self._located(item) for item in definitions]
        folder = getattr(self.get_dag(), "folder", None)
        if isinstance(definitions, (str, PurePath)) and folder and not PurePath(definitions).is_absolute():
            return str(PurePath(folder, definitions))
        return definitions

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the objects the apply created or updated (docs/lineage.md).

        :param task_instance: the finished task instance.
        """
        return operators._runtime.lineage_for(self, task_instance, "apply_definitions")
