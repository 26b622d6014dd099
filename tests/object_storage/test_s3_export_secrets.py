"""An export to S3 writes no secret the platform holds (a URL's password, a password pair) and no value in a
reference's shape that an apply would read as one: the same files as on a local disk (tests/definitions/
test_export_trust.py), read back from the S3 API server and planned against the workspace they came from."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML ships no type information

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.definitions import ExportDefinitionsOperator
from airflow_provider_analytics.sandbox.domain.config import DEFAULT_WORKSPACE
from airflow_provider_analytics.sandbox.domain.records import DataSourceRecord, WorkflowRecord
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.version_compat import object_storage_paths_work
from tests.object_storage.conftest import BUCKET
from tests.support.context import make_context
from tests.support.s3 import CONN_ID, objects

pytestmark = pytest.mark.skipif(
    not object_storage_paths_work(),
    reason="ObjectStoragePath refuses every protocol on Airflow 3.0 with universal-pathlib 0.3",
)
URL_PASSWORD = "s3-urlpw-7c6b5a"
PAIR_PASSWORD = "s3-pairpw-4d3e2f"


def test_an_export_to_s3_writes_references_and_literals_never_the_platform_s_secrets(
    hook: AnalyticsHook, sandbox: SandboxServer, s3: Any
) -> None:
    configuration = {"source": f"https://bob:{URL_PASSWORD}@feed.example.com/x", "auth": {"from_variable": "aws"}}
    connection = {"project": "p", "params": [["user", "svc"], ["password", PAIR_PASSWORD]]}
    with sandbox.state.lock:
        records = sandbox.state.workspace(DEFAULT_WORKSPACE)
        when = sandbox.state.now() - timedelta(minutes=5)
        records.workflows["wf_s3"] = WorkflowRecord("wf_s3", "to-s3", "", configuration, when, when)
        records.data_sources["ds_s3"] = DataSourceRecord("ds_s3", "to-s3", "bigquery", connection, when)
    destination = f"s3://{CONN_ID}@{BUCKET}/defs/"

    ExportDefinitionsOperator(task_id="export", destination=destination, names=["to-s3"]).execute(make_context())

    texts = {key: s3.get_object(Bucket=BUCKET, Key=key)["Body"].read().decode() for key in objects(s3, BUCKET)}
    assert sorted(texts) == [
        f"defs/{section}.yaml" for section in ("charts", "dashboards", "data_sources", "workflows")
    ]
    for text in texts.values():
        assert URL_PASSWORD not in text
        assert PAIR_PASSWORD not in text
    exported = {section: yaml.safe_load(text) for section, text in texts.items()}
    (workflow,) = exported["defs/workflows.yaml"]["workflows"]
    assert workflow["configuration"] == {
        "auth": {"$literal": {"from_variable": "aws"}},
        "source": {"from_variable": "analytics_to_s3_configuration_source"},
    }
    (source,) = exported["defs/data_sources.yaml"]["data_sources"]
    assert source["connection"]["params"] == {"from_connection": "analytics_to_s3", "field": "params"}
    plan = hook.plan_definitions([document for document in exported.values()])
    assert {change.action for change in plan.changes if change.name == "to-s3"} == {"unchanged"}
