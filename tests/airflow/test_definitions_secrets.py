"""Secrets at the definitions' trust boundary in real Airflow runs (``dag.test()``): a reviewed plan pins the
secrets its apply reads, and exported files apply the platform's values as the literals they were, reading no
secret. The DAGs are in ``dags/definitions_secrets.py``; Airflow's connections come from ``AIRFLOW_CONN_<ID>``."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from airflow_provider_analytics.sandbox.domain.config import DEFAULT_WORKSPACE
from airflow_provider_analytics.sandbox.domain.records import WorkflowRecord
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.airflow_runs import RunDag

REVIEWED_PASSWORD = "reviewed-Pw-1a2b3c4d"
EDITED_PASSWORD = "edited-Pw-5e6f7a8b"
AWS_PASSWORD = "aws-Secret-Key-9c8d7e6f"
PLANTED = {"from_connection": "aws_default", "field": "password"}


def posted(sandbox: SandboxServer, path: str) -> list[dict[str, object]]:
    return [entry.json for entry in sandbox.state.requests if entry.method == "POST" and entry.path == path]


def test_a_reference_edited_after_the_review_is_not_applied(
    run_dag: RunDag, sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for conn_id, password in (("analytics_reviewed", REVIEWED_PASSWORD), ("analytics_edited", EDITED_PASSWORD)):
        monkeypatch.setenv(
            f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "generic", "password": password})
        )

    moved = run_dag("test_definitions_secret_review", conn="analytics_reviewed", edited="analytics_edited")

    assert moved.states == {"plan": "success", "apply": "failed"}
    assert moved.tries["apply"] == 1  # ReviewedPlanMoved: no retry
    assert posted(sandbox, "/v1/data-sources") == []  # no password left for the platform
    reviewed = moved.xcom("plan")["plan"]
    assert reviewed["secrets"] == [
        {
            "kind": "data_source",
            "name": "reviewed-warehouse",
            "at": "connection.password",
            "connection": "analytics_reviewed",
            "field": "password",
        }
    ]

    applied = run_dag("test_definitions_secret_review", conn="analytics_reviewed")  # as reviewed
    assert applied.states == {"plan": "success", "apply": "success"}
    assert applied.xcom("apply")["plan"]["secrets"] == reviewed["secrets"]
    assert len(posted(sandbox, "/v1/data-sources")) == 1


def test_exported_files_apply_a_platform_value_as_the_literal_it_was(
    run_dag: RunDag, sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_AWS_DEFAULT", json.dumps({"conn_type": "aws", "password": AWS_PASSWORD}))
    configuration = {"steps": [], "source": PLANTED}
    with sandbox.state.lock:
        records = sandbox.state.workspace(DEFAULT_WORKSPACE)
        for kind in (records.dashboards, records.charts, records.data_sources, records.workflows):
            kind.clear()
        when = sandbox.state.now() - timedelta(minutes=5)
        records.workflows["wf_planted"] = WorkflowRecord("wf_planted", "planted", "", configuration, when, when)

    exported = run_dag("test_definitions_exported", folder=str(tmp_path))
    assert exported.states == {"export": "success", "drift_check": "success"}
    assert "$literal" in (tmp_path / "workflows" / "planted.yaml").read_text(encoding="utf-8")
    with sandbox.state.lock:  # dropped on the platform (or the files applied to another workspace)
        records.workflows.clear()

    applied = run_dag("test_definitions_applied_from_files", folder=str(tmp_path))

    assert applied.states == {"apply": "success"}
    assert applied.xcom("apply")["plan"]["secrets"] == []
    (created,) = records.workflows.values()
    assert created.configuration == configuration
    assert AWS_PASSWORD not in json.dumps(posted(sandbox, "/v1/workflows"))


def test_a_variable_no_request_can_carry_fails_the_apply_once_without_retries(
    run_dag: RunDag, sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_VAR_ANALYTICS_ODD_SECRET", "pre-\udcff-secretvalue")  # a byte that is not UTF-8

    run = run_dag("test_definitions_odd_secret", variable="analytics_odd_secret")

    assert run.states == {"apply": "failed"}
    assert run.tries["apply"] == 1  # a typed input error: Airflow does not retry it (it was retried 3 times)
    assert posted(sandbox, "/v1/workflows") == []
