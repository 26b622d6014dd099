"""Create charts and read their data."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, BinaryIO, ClassVar

from airflow_provider_analytics import operators  # its _runtime: what a task uses once it runs
from airflow_provider_analytics.operators._common import (
    AnalyticsBaseOperator,
    check_templated,
    task_instance_key,
    task_step,
)
from airflow_provider_analytics.wire._progress import PROGRESS_INTERVAL

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

    from airflow_provider_analytics.wire._pagination import ChartRows
    from airflow_provider_analytics.wire._progress import TransferProgress

__all__ = ["CreateChartOperator", "GetChartDataOperator"]

FILE_FORMATS = ("csv", "jsonl")


class CreateChartOperator(AnalyticsBaseOperator):
    """Create a chart; returns it. A retried task gets the first creation back instead of a duplicate.

    :param name: the chart's name (templated).
    :param type: one of ``line bar area pie table number scatter`` (templated).
    :param data_source_id: the data source the query runs on (templated).
    :param query: the chart's query (templated).
    :param options: drawing options (templated).
    :param reuse_existing: when a chart with this name already exists on the same data source, return it
        instead of creating another (for charts defined as code; the platform has no chart update).
    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    template_fields = ("name", "type", "data_source_id", "query", "options")
    template_fields_renderers = {"query": "sql", "options": "json"}

    def __init__(
        self,
        *,
        name: str,
        type: str,
        data_source_id: str,
        query: str,
        options: Mapping[str, Any] | None = None,
        reuse_existing: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.name = name
        self.type = type
        self.data_source_id = data_source_id
        self.query = query
        self.options = options
        self.reuse_existing = reuse_existing

    @task_step
    def execute(self, context: Context) -> dict[str, Any]:
        operators._runtime.validate_id(self.data_source_id, "data_source_id")
        check_templated(self.options, "options")
        if self.reuse_existing:
            for chart in self.hook.list_charts():
                if chart.get("name") == self.name and chart.get("data_source_id") == self.data_source_id:
                    chart_id = operators._runtime.answered_id(chart.get("id"), f"id of chart {self.name!r}")
                    self.log.info("Chart %r exists as %s; reusing it", self.name, chart_id)
                    return dict(chart)
        chart = self.hook.create_chart(
            self.name,
            self.type,
            self.data_source_id,
            self.query,
            self.options,
            idempotency_key=task_instance_key(context, "chart"),
        )
        chart_id = operators._runtime.answered_id(chart.get("id"), f"id of chart {self.name!r}")
        self.log.info("Created chart %s (%s)", chart_id, self.name)
        return dict(chart)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the data source read, the chart created (docs/lineage.md).

        :param task_instance: the finished task instance.
        """
        return operators._runtime.lineage_for(self, task_instance, "create_chart")


class GetChartDataOperator(AnalyticsBaseOperator):
    """Read a chart's data across all pages.

    Without ``destination`` the rows go to XCom (``{"chart_id", "columns", "rows"}``), at most
    ``max_xcom_rows`` of them: a bigger chart fails with a hint to give a destination. With one, the rows
    stream to a CSV or JSON-lines file (local path or ``ObjectStoragePath`` URI) and the task returns
    ``{"uri", "rows", "columns", "format"}``.

    :param chart_id: the chart (templated).
    :param destination: a file path or URI to write to (templated).
    :param file_format: ``csv`` (header row of column names) or ``jsonl`` (one object per row).
    :param overwrite: replace an existing file.
    :param page_size: rows per request (1-100).
    :param max_xcom_rows: the most rows returned through XCom when there is no destination.
    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    template_fields = ("chart_id", "destination")
    # Seconds between progress lines of a long export to a file (the chart's size is not known in advance).
    progress_interval: ClassVar[float] = PROGRESS_INTERVAL

    def __init__(
        self,
        *,
        chart_id: str,
        destination: Any = None,
        file_format: str = "csv",
        overwrite: bool = False,
        page_size: int = 100,
        max_xcom_rows: int = 1000,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.chart_id = chart_id
        self.destination = destination
        self.file_format = file_format
        self.overwrite = overwrite
        self.page_size = page_size
        self.max_xcom_rows = max_xcom_rows

    @task_step
    def execute(self, context: Context) -> dict[str, Any]:
        operators._runtime.validate_id(self.chart_id, "chart_id")
        operators._runtime.validate_page_size(self.page_size)
        if self.file_format not in FILE_FORMATS:
            raise operators._runtime.AnalyticsInputError(
                f"file_format must be one of {', '.join(FILE_FORMATS)}, got {self.file_format!r}"
            )
        if not self.destination:
            return self._to_xcom()
        # Imported when a file is written, not when a DAG file is parsed.

        where = operators._runtime.Destination.parse(self.destination)
        if where.is_folder:
            raise operators._runtime.AnalyticsInputError(
                f"destination must name a file, got the folder {self.destination!r}"
            )
        operators._runtime.refuse_existing(where.path, self.overwrite)
        rows = self.hook.iter_chart_data(self.chart_id, self.page_size)
        progress = operators._runtime.TransferProgress(
            f"chart {self.chart_id} to {where.path}", "rows", log=self.log, interval=self.progress_interval
        )
        count = operators._runtime.write_atomically(where.path, lambda out: self._write(rows, out, progress))
        self.log.info("Wrote %d rows of chart %s to %s", count, self.chart_id, where.path)
        return {"uri": str(where.path), "rows": count, "columns": rows.columns or [], "format": self.file_format}

    def _to_xcom(self) -> dict[str, Any]:
        rows = self.hook.iter_chart_data(self.chart_id, self.page_size)
        collected: list[list[Any]] = []
        for row in rows:
            if len(collected) >= self.max_xcom_rows:
                raise operators._runtime.AnalyticsInputError(
                    f"chart {self.chart_id} has more than max_xcom_rows={self.max_xcom_rows} rows: give a "
                    "destination to write them to a file instead of XCom"
                )
            collected.append(row)
        columns = rows.columns or []
        self.log.info("Read %d rows of chart %s (%d columns), returned through XCom", len(collected), self.chart_id,
                      len(columns))  # fmt: skip
        return {"chart_id": self.chart_id, "columns": columns, "rows": collected}

    def _write(self, rows: ChartRows, out: BinaryIO, progress: TransferProgress) -> int:
        text = io.TextIOWrapper(out, encoding="utf-8", newline="")
        count = 0
        writer = csv.writer(text)
        for row in rows:
            names = [column["name"] for column in rows.columns or []]
            if count == 0 and self.file_format == "csv":
                writer.writerow(names)
            if self.file_format == "csv":
                writer.writerow(row)
            else:
                text.write(json.dumps(dict(zip(names, row, strict=True)), default=str) + "\n")
            count += 1
            progress.update(count)
        text.flush()
        progress.finish(count)
        text.detach()
        return count

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the chart and its data source read, the file written (one extra call) (docs/lineage.md).

        :param task_instance: the finished task instance.
        """
        return operators._runtime.lineage_for(self, task_instance, "get_chart_data")
