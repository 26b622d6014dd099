"""What the platform wrote is data, never a reference, and never a secret in a file, against the sandbox: a value in
a reference's shape is exported as a literal (``{$literal: ...}``) that plans as unchanged and that an apply sends as
written without reading any secret; a password inside a URL or a DSN, or in a pair or a named value, is exported as a
reference like every other secret; a secret where no reference can stand fails the export, naming the object."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML ships no type information

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator, ExportDefinitionsOperator
from airflow_provider_analytics.sandbox.domain.records import ChartRecord, DataSourceRecord, WorkflowRecord
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import AnalyticsInputError, UnexpectedResponseError
from tests.definitions.helpers import logged, workspace
from tests.support.context import make_context
from tests.support.names import CONN_ENV

# What a platform (or whoever controls one) can write into an object: a mapping that reads as a reference to any
# Airflow secret of the deployment that applies the exported files.
PLANTED = {"from_connection": "aws_default", "field": "password"}
AWS_PASSWORD = "aws-Secret-Key-0f9e8d7c6b5a"


def plant(sandbox: SandboxServer, **records: Any) -> None:
    """Objects written on the platform out of band (its UI, its API, whoever controls it)."""
    with sandbox.state.lock:
        now = sandbox.state.now() - timedelta(minutes=5)
        records_of = workspace(sandbox)
        for ident, (kind, name, value) in records.items():
            if kind == "workflow":
                records_of.workflows[ident] = WorkflowRecord(ident, name, "", value, now, now)
            elif kind == "chart":
                source = next(iter(records_of.data_sources), "ds_base")
                if source == "ds_base":
                    records_of.data_sources[source] = DataSourceRecord(
                        source, "base", "bigquery", {"project": "b"}, now
                    )
                records_of.charts[ident] = ChartRecord(ident, name, "line", source, "select 1", value, now, now)
            else:
                records_of.data_sources[ident] = DataSourceRecord(ident, name, "bigquery", value, now)


def export_to(folder: Path, **filters: Any) -> dict[str, Any]:
    return ExportDefinitionsOperator(task_id="export", destination=f"{folder}/", **filters).execute(make_context())


def drop(sandbox: SandboxServer, *idents: str) -> None:
    """The platform's objects gone (dropped by it, or the files applied to another workspace)."""
    with sandbox.state.lock:
        records = workspace(sandbox)
        for kind in (records.charts, records.workflows, records.data_sources):
            for ident in idents:
                kind.pop(ident, None)


def test_a_value_in_a_reference_s_shape_is_exported_as_a_literal_and_applied_as_one(
    empty: SandboxServer, hook: AnalyticsHook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_AWS_DEFAULT", json.dumps({"conn_type": "aws", "password": AWS_PASSWORD}))
    monkeypatch.setenv("AIRFLOW_VAR_DEPLOY_KEY", AWS_PASSWORD)
    # Even a deployment that lets definitions read every secret: the escape, not the allow-list, keeps it.
    connection = json.loads(empty.connection_json())
    connection["extra"]["secret_sources"] = ["*"]
    monkeypatch.setenv(CONN_ENV, json.dumps(connection))
    configuration = {"steps": [], "source": PLANTED, "nested": [{"key": {"from_variable": "deploy_key"}}]}
    plant(
        empty,
        wf_planted=("workflow", "planted", configuration),
        ds_planted=("data_source", "planted-source", {"project": "p", "sslrootcert": PLANTED}),
        ch_planted=("chart", "Planted", {"$literal": "x", "other": {"form_variable": "typo"}}),
    )

    result = export_to(tmp_path, names=["planted", "planted-source", "Planted"])

    text = "\n".join(Path(uri).read_text(encoding="utf-8") for uri in result["files"])
    assert "$literal:" in text
    exported = hook.export_definitions(names=["planted", "planted-source", "Planted"])
    (workflow,) = exported["workflows"]
    assert workflow["configuration"] == {
        "nested": [{"key": {"$literal": {"from_variable": "deploy_key"}}}],
        "source": {"$literal": PLANTED},
        "steps": [],
    }
    (source,) = exported["data_sources"]
    assert source["connection"] == {"project": "p", "sslrootcert": {"$literal": PLANTED}}
    (chart,) = exported["charts"]
    # The options themselves are fields, never a reference: only a value inside them is escaped.
    assert chart["options"] == {"$literal": "x", "other": {"$literal": {"form_variable": "typo"}}}
    # Read back as the platform's data: on the same workspace nothing changes, and the plan reads no secret.
    plan = hook.plan_definitions(f"{tmp_path}/*.yaml")
    assert {change.action for change in plan.changes if change.name in ("planted", "planted-source", "Planted")} == {
        "unchanged"
    }
    assert plan.secrets == []

    drop(empty, "wf_planted", "ds_planted", "ch_planted")
    before = len(empty.state.requests)
    applied = ApplyDefinitionsOperator(task_id="apply", definitions=f"{tmp_path}/*.yaml").execute(make_context())

    assert applied["plan"]["secrets"] == []
    assert sorted(item["name"] for item in applied["applied"]["written"]) == ["Planted", "planted", "planted-source"]
    records = workspace(empty)
    (created,) = (record for record in records.workflows.values() if record.name == "planted")
    assert created.configuration == configuration  # the literal, as the platform held it
    (created_source,) = (record for record in records.data_sources.values() if record.name == "planted-source")
    assert created_source.connection == {"project": "p", "sslrootcert": PLANTED}
    (created_chart,) = (record for record in records.charts.values() if record.name == "Planted")
    assert created_chart.options == {"$literal": "x", "other": {"form_variable": "typo"}}
    sent = json.dumps([entry.json for entry in empty.state.requests[before:]])
    assert AWS_PASSWORD not in sent


def test_passwords_in_urls_dsns_pairs_and_named_values_are_exported_as_references(
    empty: SandboxServer,
    hook: AnalyticsHook,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    secrets = ["urlpw-4f1d2c", "dsnpw-8a7b6c", "pairpw-1e2d3c", "namedpw-9f8e7d", "kvpw-5a4b3c"]
    url, dsn, pair, named, key_value = secrets
    plant(
        empty,
        wf_urls=(
            "workflow",
            "urls",
            {
                "source": f"https://bob:{url}@host.example.com/feed",
                "headers": [{"name": "X-Api-Key", "value": named}],
                "target": f"host=db user=svc password={key_value} dbname=sales",
            },
        ),
        ch_dsn=("chart", "Dsn", {"target": f"postgres://svc:{dsn}@db:5432/sales"}),
        ds_pairs=("data_source", "pairs", {"project": "p", "params": [["user", "svc"], ["password", pair]]}),
    )

    result = export_to(tmp_path, names=["urls", "Dsn", "pairs"])

    text = "\n".join(Path(uri).read_text(encoding="utf-8") for uri in result["files"])
    for secret in secrets:
        assert secret not in text
    exported = hook.export_definitions(names=["urls", "Dsn", "pairs"])
    (workflow,) = exported["workflows"]
    assert workflow["configuration"] == {
        "headers": [{"name": "X-Api-Key", "value": {"from_variable": "analytics_urls_configuration_headers_0_value"}}],
        "source": {"from_variable": "analytics_urls_configuration_source"},
        "target": {"from_variable": "analytics_urls_configuration_target"},
    }
    (chart,) = exported["charts"]
    assert chart["options"] == {"target": {"from_variable": "analytics_dsn_options_target"}}
    (source,) = exported["data_sources"]
    assert source["connection"] == {
        "params": {"from_connection": "analytics_pairs", "field": "params"},  # a connection holds one only there
        "project": "p",
    }
    # The references name what the default secret_sources allows, and plan as unchanged where they came from.
    plan = hook.plan_definitions(f"{tmp_path}/*.yaml")
    assert {change.action for change in plan.changes if change.name in ("urls", "Dsn", "pairs")} == {"unchanged"}
    said = logged(capsys, caplog)
    assert "analytics_urls_configuration_source" in said  # the WARNING names each variable to create
    for secret in secrets:
        assert secret not in said


@pytest.mark.parametrize(
    ("record", "says"),
    [
        (("chart", "Query", {}), "holds a credential (a URL's or DSN's password, a Bearer token, a header's or an"),
        (("workflow", "Shaped", {"auth": {"from_variable": "x", "token": "tok-9a8b7c6d"}}), "at configuration.auth"),
    ],
)
def test_a_secret_an_export_cannot_refer_to_fails_it_naming_the_object(
    empty: SandboxServer, tmp_path: Path, record: tuple[str, str, Any], says: str
) -> None:
    plant(empty, ob_secret=record)
    if record[0] == "chart":
        with empty.state.lock:
            workspace(empty).charts["ob_secret"].query = "select * from dblink('postgres://svc:qpw-1a2b3c@db/x')"
    with pytest.raises(UnexpectedResponseError) as caught:  # the platform's answer: a retry reads it again
        export_to(tmp_path, names=[record[1]])
    assert f"{record[0]} {record[1]!r} (ob_secret)" in str(caught.value)
    assert says in str(caught.value)
    assert "qpw-1a2b3c" not in str(caught.value)
    assert "tok-9a8b7c6d" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_the_literal_escape_stands_alone_and_is_read_as_written(empty: SandboxServer, hook: AnalyticsHook) -> None:
    literal = {"from_connection": "aws_default"}
    document = {
        "data_sources": [
            {
                "name": "escaped",
                "type": "bigquery",
                "connection": {"project": "p", "extra": {"a": {"$literal": literal}}},
            }
        ],
        "workflows": [{"name": "w", "configuration": {"value": {"$literal": literal}}}],
    }
    plan = hook.plan_definitions(document)
    assert plan.secrets == []
    assert {change.action for change in plan.changes if change.name in ("escaped", "w")} == {"create"}
    hook.apply_plan(plan)
    records = workspace(empty)
    assert [record.configuration for record in records.workflows.values()] == [{"value": literal}]
    assert [record.connection for record in records.data_sources.values()] == [
        {"project": "p", "extra": {"a": literal}}
    ]

    before = len(empty.state.requests)
    with pytest.raises(AnalyticsInputError, match=r"configuration\.value: \$literal stands alone") as caught:
        hook.plan_definitions({"workflows": [{"name": "w", "configuration": {"value": {"$literal": 1, "b": 2}}}]})
    assert "found 'b'" in str(caught.value)
    assert len(empty.state.requests) == before  # refused before any request


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (
            json.dumps(
                {"type": "service_account", "private_key": "-----BEGIN KEY-----\nMIIEgcp77\n-----END KEY-----\n"}
            ),
            "MIIEgcp77",
        ),
        (str({"user": "svc", "password": "repr-Pw-4d5e6f"}), "repr-Pw-4d5e6f"),
        ("db: {host: h, password: flow-Pw-7a8b9c}", "flow-Pw-7a8b9c"),
        ("<auth><password>xml-Pw-1c2d3e</password></auth>", "xml-Pw-1c2d3e"),
    ],
)
def test_a_credential_in_a_serialised_mapping_is_exported_as_a_reference(
    empty: SandboxServer, tmp_path: Path, text: str, secret: str
) -> None:
    # The third outside pass: each of these texts was written to the export's files in clear.
    plant(empty, wf_serialised=("workflow", "serialised", {"settings": text}))

    export_to(tmp_path, names=["serialised"])

    written = "".join(path.read_text() for path in tmp_path.rglob("*.yaml"))
    assert "analytics_serialised_configuration_settings" in written  # a variable the deployment must hold
    assert secret not in written


def test_two_secrets_never_share_one_reference(empty: SandboxServer, tmp_path: Path) -> None:
    # Slugs drop what tells these apart; one shared variable would make an apply send one secret for both.
    fullwidth = "".join(chr(ord(letter) + 0xFEE0) for letter in "password")
    plant(
        empty,
        wf_clash_a=(
            "workflow",
            "Prod-A",
            {"API_KEY": "k1-9f8e7d", "api-key": "k2-6c5b4a", "env": ["--token", "t-8a7b6c"]},
        ),
        wf_clash_b=(
            "workflow",
            "prod_a",
            {"password": "pw-3e2d1c", fullwidth: "pw-0f1e2d", "env_1": "PWD=t-5d4e3f"},
        ),
        ds_clash_a=("data_source", "Sales-DB", {"password": "ds-1a2b3c"}),
        ds_clash_b=("data_source", "sales_db", {"password": "ds-4d5e6f"}),
    )

    export_to(tmp_path, names=["Prod-A", "prod_a", "Sales-DB", "sales_db"])
    again = tmp_path / "again"
    export_to(again, names=["Prod-A", "prod_a", "Sales-DB", "sales_db"])

    references: list[str] = []
    pending: list[Any] = [yaml.safe_load(path.read_text()) for path in sorted(tmp_path.glob("*.yaml"))]
    while pending:
        value = pending.pop()
        if isinstance(value, dict) and ({"from_variable", "from_connection"} & value.keys()):
            references.append(json.dumps(value, sort_keys=True))
        elif isinstance(value, dict):
            pending += value.values()
        elif isinstance(value, list):
            pending += value
    variables = [ref for ref in references if "from_variable" in ref]
    assert len(variables) == 6  # API_KEY, api-key, env[1] (--token's value); password, the fullwidth one, env_1
    assert len(set(variables)) == 6
    connections = {ref for ref in references if "from_connection" in ref}
    assert len(connections) == 2  # one Airflow connection per data source, each its own
    assert sorted(path.read_text() for path in again.glob("*.yaml")) == sorted(
        path.read_text() for path in tmp_path.glob("*.yaml")
    )  # the same names at every export
