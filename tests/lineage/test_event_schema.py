"""The events built from the operators' lineage validate against OpenLineage's schemas (offline)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from openlineage.client.event_v2 import Job, Run, RunEvent, RunState
from openlineage.client.serde import Serde

from airflow_provider_analytics.lineage._facets import FACET_NAME, FACET_SCHEMA_URL
from airflow_provider_analytics.operators.charts import GetChartDataOperator
from airflow_provider_analytics.operators.reports import GenerateReportOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.lineage.conftest import run_task
from tests.lineage.openlineage_schemas import CORE_URL, errors, event_errors, schema_for


def complete_event(lineage: Any) -> dict[str, Any]:
    """A COMPLETE event carrying ``lineage``, serialised as a transport sends it."""
    event = RunEvent(
        eventType=RunState.COMPLETE,
        eventTime=datetime.now(UTC).isoformat(),
        run=Run(runId=str(uuid.uuid4()), facets=lineage.run_facets),
        job=Job(namespace="default", name="dag.task", facets=lineage.job_facets),
        inputs=lineage.inputs,
        outputs=lineage.outputs,
        producer="https://github.com/apache/airflow/tree/providers-openlineage/2.20.3",
    )
    result: dict[str, Any] = Serde.to_dict(event)
    return result


def test_our_facet_names_a_schema_shipped_with_the_package() -> None:
    assert schema_for(FACET_SCHEMA_URL) == ("AnalyticsRunFacet-1-0-0.json", "/$defs/AnalyticsRunFacet")


def test_events_of_a_report_and_a_chart_read_validate(sandbox: SandboxServer, tmp_path: Path) -> None:
    generate = GenerateReportOperator(task_id="generate", dashboard_ids=["db_sales"], poll_interval=0.1)
    rows = GetChartDataOperator(task_id="rows", chart_id="ch_revenue", destination=str(tmp_path / "r.jsonl"))
    for operator in (generate, rows):
        event = complete_event(operator.get_openlineage_facets_on_complete(run_task(operator)))
        problems, unchecked = event_errors(event)
        assert problems == []
        assert unchecked == []
        assert event["run"]["facets"][FACET_NAME]["_schemaURL"] == FACET_SCHEMA_URL
        assert event["outputs"], event


def test_the_schemas_catch_a_broken_event(sandbox: SandboxServer) -> None:
    # Guards the checks above: a facet without _producer, an unknown operation, a bad id, a bad event type.
    operator = GenerateReportOperator(task_id="generate", dashboard_ids=["db_sales"], poll_interval=0.1)
    event = complete_event(operator.get_openlineage_facets_on_complete(run_task(operator)))
    ours = event["run"]["facets"][FACET_NAME]
    ours.pop("_producer")
    ours["operation"] = "delete_everything"
    ours["ids"]["report_id"] = "../etc"
    event["eventType"] = "DONE"
    event["run"]["runId"] = "not-a-uuid"
    problems, _ = event_errors(event)
    text = "\n".join(problems)
    for expected in ("'_producer' is a required property", "'delete_everything' is not one of", "../etc", "DONE"):
        assert expected in text, text
    assert errors({"runId": "not-a-uuid"}, CORE_URL, "/$defs/Run"), "uuid format is checked"
