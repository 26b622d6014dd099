"""Connect data sources."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics import operators  # its _runtime: what a task uses once it runs
from airflow_provider_analytics.operators._common import (
    AnalyticsBaseOperator,
    check_templated,
    task_instance_key,
    task_step,
)

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

__all__ = ["ConnectDataSourceOperator"]


class ConnectDataSourceOperator(AnalyticsBaseOperator):
    """Connect a data source; returns it (secret connection fields are never returned or logged).

    Pass secrets through templates from Airflow connections or variables (for example
    ``"{{ conn.warehouse.password }}"``) so they are masked in logs and the rendered-fields view.

    :param name: the data source's name (templated).
    :param type: the source's type, e.g. ``postgres`` or ``bigquery`` (templated).
    :param connection: connection settings (templated); secret fields are write-only on the platform.
    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    template_fields = ("name", "type", "connection")
    template_fields_renderers = {"connection": "json"}

    def __init__(self, *, name: str, type: str, connection: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.name = name
        self.type = type
        self.connection = connection

    @task_step
    def execute(self, context: Context) -> dict[str, Any]:
        check_templated(self.connection, "connection")
        source = self.hook.connect_data_source(
            self.name, self.type, self.connection, idempotency_key=task_instance_key(context, "data_source")
        )
        source_id = operators._runtime.answered_id(source.get("id"), f"id of data source {self.name!r}")
        self.log.info("Connected data source %s (%s, %s)", source_id, self.name, self.type)
        return dict(source)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the data source connected (docs/lineage.md).

        :param task_instance: the finished task instance.
        """
        return operators._runtime.lineage_for(self, task_instance, "connect_data_source")
