"""What a review sees is what is applied, secrets included, against the sandbox: the plan names every secret its
apply reads (table, XCom, log), and a reviewed plan pins them; every field's content is in the row's digest, a
secret through a keyed hash whose key is the deployment's (so an edit under ``max_tokens`` or ``proxy`` moves the
plan, and the digest cannot be guessed back); a create's ``Idempotency-Key`` holds no secret at all."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from typing import Any

import pytest

from airflow_provider_analytics.operators._common import task_instance_key
from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator
from airflow_provider_analytics.operators.errors import ReviewedPlanMoved
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import ConflictError
from tests.definitions.helpers import workspace, writes
from tests.support.context import make_context
from tests.support.task_log import task_log

WAREHOUSE_PASSWORD = "wh-Pw-0a1b2c3d4e5f"
OTHER_PASSWORD = "other-Pw-6f5e4d3c2b1a"


def airflow_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    for conn_id, password in (("analytics_warehouse_db", WAREHOUSE_PASSWORD), ("analytics_other", OTHER_PASSWORD)):
        monkeypatch.setenv(
            f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "generic", "password": password})
        )
    monkeypatch.setenv("AIRFLOW_VAR_ANALYTICS_DATABASE", "sales-db-9b8a")  # registered if read: no common word


def source(password: Any, database: Any = "sales") -> dict[str, Any]:
    connection = {"project": "p", "database": database, "password": password}
    return {"data_sources": [{"name": "warehouse", "type": "bigquery", "connection": connection}]}


def plan(document: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = ApplyDefinitionsOperator(task_id="plan", definitions=document, plan_only=True).execute(
        make_context()
    )
    return result


def apply(document: dict[str, Any], reviewed: Any) -> dict[str, Any]:
    operator = ApplyDefinitionsOperator(task_id="apply", definitions=document, reviewed_plan=reviewed, retries=3)
    result: dict[str, Any] = operator.execute(make_context())
    return result


def test_the_plan_names_every_secret_its_apply_reads_in_its_table_xcom_and_log(
    empty: SandboxServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    airflow_holds(monkeypatch)
    document = source({"from_connection": "analytics_warehouse_db"}, {"from_variable": "analytics_database"})
    document["workflows"] = [{"name": "w", "configuration": {"auth": {"token": {"from_variable": "analytics_db"}}}}]
    with task_log(caplog) as lines:
        result = plan(document)

    secrets = result["plan"]["secrets"]
    assert secrets == [
        {"kind": "data_source", "name": "warehouse", "at": "connection.database", "variable": "analytics_database"},
        {
            "kind": "data_source",
            "name": "warehouse",
            "at": "connection.password",
            "connection": "analytics_warehouse_db",
            "field": "password",
        },
        {"kind": "workflow", "name": "w", "at": "configuration.auth.token", "variable": "analytics_db"},
    ]
    (row,) = (change for change in result["plan"]["changes"] if change["kind"] == "data_source")
    assert row["reads"] == [
        {key: value for key, value in item.items() if key not in ("kind", "name")} for item in secrets[:2]
    ]
    log = "\n".join(message for _, message in lines)
    assert "Secrets this apply reads from Airflow (3):" in log
    assert "data_source 'warehouse' connection.password: field 'password' of Airflow connection" in log
    assert "workflow 'w' configuration.auth.token: Airflow variable 'analytics_db'" in log
    assert WAREHOUSE_PASSWORD not in json.dumps(result) + log  # named, never read by a plan


@pytest.mark.parametrize(
    ("reviewed", "edited", "says"),
    [
        (  # the reference changed: another connection's password
            source({"from_connection": "analytics_warehouse_db"}),
            source({"from_connection": "analytics_other"}),
            "reviewed reading field 'password' of connection 'analytics_warehouse_db' (connection.password) from"
            " Airflow, now reading field 'password' of connection 'analytics_other' (connection.password)",
        ),
        (  # a reference added: a value became a secret read from Airflow
            source({"from_connection": "analytics_warehouse_db"}),
            source({"from_connection": "analytics_warehouse_db"}, {"from_variable": "analytics_database"}),
            "now reading variable 'analytics_database' (connection.database), field 'password' of connection",
        ),
    ],
)
def test_a_reference_changed_or_added_after_the_review_moves_the_plan(
    empty: SandboxServer,
    monkeypatch: pytest.MonkeyPatch,
    reviewed: dict[str, Any],
    edited: dict[str, Any],
    says: str,
) -> None:
    airflow_holds(monkeypatch)
    with pytest.raises(ReviewedPlanMoved) as moved:
        apply(edited, plan(reviewed))
    assert writes(empty) == []
    assert says in str(moved.value)


def configured(**changes: Any) -> dict[str, Any]:
    """A workflow whose configuration has keys the one rule counts as secret, only because of their names."""
    # Each text under such a key is registered as a secret for the life of the process: none is a common word.
    configuration = {"steps": [], "max_tokens": 256, "proxy": {"host": "proxy-7e1d.internal", "port": 3128}}
    configuration.update(tokenizer="bpe", dsn="dsn-name-4c2a")
    return {"workflows": [{"name": "llm", "configuration": {**configuration, **changes}}]}


@pytest.mark.parametrize(
    "edit",
    [
        {"max_tokens": 4096},
        {"proxy": {"host": "collector.attacker.example", "port": 3128}},
        {"tokenizer": "gpt2"},
        {"dsn": "postgres://attacker.example/sales"},
    ],
)
def test_every_edit_after_the_review_moves_the_plan_whatever_its_key_is_called(
    empty: SandboxServer, edit: dict[str, Any]
) -> None:
    reviewed = plan(configured())
    assert "max_tokens" not in json.dumps(reviewed["plan"]["changes"])  # a create row shows no content

    with pytest.raises(ReviewedPlanMoved) as moved:
        apply(configured(**edit), reviewed)

    assert writes(empty) == []
    assert "workflow 'llm': reviewed as create (content " in str(moved.value)
    apply(configured(), reviewed)  # the reviewed content itself is applied
    (record,) = workspace(empty).workflows.values()
    assert record.configuration == configured()["workflows"][0]["configuration"]


def fernet_key() -> str:
    return base64.urlsafe_b64encode(os.urandom(32)).decode()


def test_a_secret_enters_a_digest_only_through_the_deployment_s_key(
    empty: SandboxServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    document = {
        "workflows": [
            {"name": "secretive", "configuration": {"api_token": "summer2026"}},
            {"name": "plain", "configuration": {"steps": []}},
        ]
    }
    monkeypatch.setenv("AIRFLOW__CORE__FERNET_KEY", fernet_key())
    under_one = plan(document)
    assert plan(document)["plan"]["changes"] == under_one["plan"]["changes"]  # the same key: the same digests
    monkeypatch.setenv("AIRFLOW__CORE__FERNET_KEY", f"{fernet_key()},{fernet_key()}")  # a key rotated
    under_another = plan(document)

    def digests(result: dict[str, Any]) -> dict[str, str]:
        return {change["name"]: change["digest"] for change in result["plan"]["changes"]}

    assert digests(under_one)["plain"] == digests(under_another)["plain"]  # no secret: no key in it
    assert digests(under_one)["secretive"] != digests(under_another)["secretive"]
    assert under_one["plan"]["digest_key"] != under_another["plan"]["digest_key"]
    with pytest.raises(ReviewedPlanMoved) as moved:  # reviewed under one key, applied under another
        apply(document, under_one)
    assert "the reviewed plan was made under another deployment key than this one" in str(moved.value)
    assert "[core] fernet_key" in str(moved.value)
    assert "plain" not in str(moved.value)
    assert writes(empty) == []

    monkeypatch.setenv("AIRFLOW__CORE__FERNET_KEY", "")  # a deployment without one: this process's key
    with task_log(caplog) as lines:
        unkeyed = plan(document)
    assert digests(unkeyed)["plain"] == digests(under_one)["plain"]
    warnings = [message for level, message in lines if level == "warning"]
    assert any("[core] fernet_key is not set" in message for message in warnings), lines


def key_from_main(seed: str, name: str, configuration: dict[str, Any]) -> str:
    """A create's Idempotency-Key by the formula an earlier release used (the source is public): the body hashed
    with its secrets outside connections, as anyone who sees the header and the task's identity can recompute."""
    body = {"name": name, "configuration": configuration, "description": ""}
    text = json.dumps([seed, "workflow", name, body], sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return f"apa-def-workflow-{hashlib.sha256(text.encode()).hexdigest()[:48]}"


def test_an_idempotency_key_cannot_be_guessed_back_to_a_secret(empty: SandboxServer) -> None:
    def enrich(token: str) -> dict[str, Any]:
        return {"workflows": [{"name": "enrich", "configuration": {"steps": [], "api_token": token}}]}

    document = enrich("summer2026")
    context = make_context()
    ApplyDefinitionsOperator(task_id="apply", definitions=document).execute(context)
    (create,) = writes(empty)
    header = create.headers["idempotency-key"]

    seed = task_instance_key(context, "definitions")  # what the task's visible identity gives
    words = ["password", "letmein", "hunter2", "summer2025", "summer2026", "winter2026"]
    assert [word for word in words if key_from_main(seed, "enrich", {"steps": [], "api_token": word}) == header] == []

    # Nor does the key depend on the secret at all: another value under the same task instance sends the same key
    # (the platform refuses the other body with 409 rather than creating twice).
    with empty.state.lock:
        workspace(empty).workflows.clear()
    with pytest.raises(ConflictError):
        ApplyDefinitionsOperator(task_id="apply", definitions=enrich("winter2027")).execute(make_context())
    (_, again) = writes(empty)
    assert again.headers["idempotency-key"] == header


def test_an_edit_hidden_behind_a_name_that_masks_the_same_moves_the_plan(empty: SandboxServer) -> None:
    # A plan is output, so its names are masked: "n-***" as written and "n-<secret>" look the same in it. The
    # reviewed rows were matched by name, the later one replacing the earlier, so an edit of either went through.
    secret = "alphasecret-5e6f7a"

    def document(steps: list[str]) -> dict[str, Any]:
        return {
            "workflows": [
                {"name": "n-***", "configuration": {"steps": steps}},
                {"name": f"n-{secret}", "configuration": {"api_token": secret}},
            ]
        }

    reviewed = plan(document(["ok"]))
    assert [row["name"] for row in reviewed["plan"]["changes"]] == ["n-***", "n-***"]

    with pytest.raises(ReviewedPlanMoved) as moved:
        apply(document(["edited-after-review"]), reviewed)

    assert writes(empty) == []
    assert "workflow 'n-***': 2 objects of this name once its secrets are masked" in str(moved.value)
    apply(document(["ok"]), reviewed)  # the reviewed content itself is applied
    assert sorted(record.name for record in workspace(empty).workflows.values()) == ["n-***", f"n-{secret}"]
