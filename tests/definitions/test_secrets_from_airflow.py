"""A data source's connection field kept in Airflow (``{from_connection: ...}``, ``{from_variable: ...}``), against
the sandbox: read only when applying, sent to the platform, and found nowhere else; a missing one fails the task
before any write; a malformed one is refused when loading. Airflow's connections and variables come from
``AIRFLOW_CONN_<ID>`` and ``AIRFLOW_VAR_<KEY>``, as a deployment's environment backend gives them."""

from __future__ import annotations

import copy
import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from airflow_provider_analytics.definitions._apply import plan_definitions
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator
from airflow_provider_analytics.operators.errors import FinalFailure
from airflow_provider_analytics.sandbox.domain.records import DataSourceRecord
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import ConflictError
from tests.definitions.helpers import workspace, write_file, writes
from tests.definitions.test_bad_definitions import refused
from tests.support.airflow_runs import broken_in_airflow
from tests.support.context import make_context
from tests.support.task_log import task_log

CONN_ID = "analytics_warehouse_db"
VARIABLE = "analytics_warehouse_database"


def unique(label: str) -> str:
    """A value no earlier test registered with the masker (registration lasts for the process)."""
    return f"{label}-{uuid.uuid4().hex[:12]}"


def kept_in_airflow(monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, str]:
    """An Airflow connection (a password, and a role in its extra) and a variable; returns the three values."""
    password, role, database = unique("pw"), unique("role"), unique("db")
    connection = {"conn_type": "postgres", "host": "db", "login": "svc", "password": password, "extra": {"role": role}}
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(connection))
    monkeypatch.setenv(f"AIRFLOW_VAR_{VARIABLE.upper()}", database)
    return password, role, database


def referring() -> dict[str, Any]:
    """A data source whose password, role and database are kept in Airflow, and a chart on it."""
    connection = {
        "host": "db",
        "user": {"from_connection": CONN_ID, "field": "login"},
        "password": {"from_connection": CONN_ID},
        "role": {"from_connection": CONN_ID, "field": "role"},
        "database": {"from_variable": VARIABLE},
    }
    return {
        "data_sources": [{"name": "warehouse-kept", "type": "postgres", "connection": connection}],
        "charts": [{"name": "Kept", "type": "line", "data_source": "warehouse-kept", "query": "select 1"}],
    }


def held(sandbox: SandboxServer, name: str) -> DataSourceRecord:
    with sandbox.state.lock:
        (record,) = (item for item in workspace(sandbox).data_sources.values() if item.name == name)
    return record


def sent_exactly(sandbox: SandboxServer, connection: dict[str, Any]) -> bool:
    """Whether the provider's create of ``warehouse-kept`` sent ``connection``: the platform keeps no secret field
    (nor does its request log), but answers a repeat of a keyed POST with the first answer only when the body is
    the same, and with 409 otherwise."""
    create = next(entry for entry in writes(sandbox) if entry.path == "/v1/data-sources")  # the provider's
    headers = {"Authorization": f"Bearer {sandbox.token}", "Idempotency-Key": create.headers["idempotency-key"]}
    body = {"name": "warehouse-kept", "type": "postgres", "connection": connection}
    answer = httpx.post(f"{sandbox.base_url}/v1/data-sources", json=body, headers=headers, timeout=10)
    assert answer.status_code in (201, 409), answer.text
    return answer.status_code == 201


def test_the_platform_gets_the_values_and_nothing_else_shows_them(
    empty: SandboxServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    secrets = kept_in_airflow(monkeypatch)
    password, role, database = secrets
    given = referring()
    operator = ApplyDefinitionsOperator(task_id="apply", definitions=given)
    context = make_context()
    with task_log(caplog) as lines:
        result = operator.execute(context)

    sent = {"host": "db", "user": "svc", "password": password, "role": role, "database": database}
    assert held(empty, "warehouse-kept").connection == {key: sent[key] for key in sent if key != "password"}
    assert sent_exactly(empty, sent)
    assert not sent_exactly(empty, {**sent, "password": "another-password"})  # the check can fail
    assert [item["action"] for item in result["applied"]["written"]] == ["create", "create"]
    assert operator.definitions == referring()  # the rendered template field is left as written
    captured = capsys.readouterr()
    shown = {
        "XCom": json.dumps([result, context["ti"].xcom], default=str),
        "rendered field": json.dumps(operator.definitions) + repr(operator.definitions),
        "task log": "\n".join(message for _, message in lines) + repr(lines),
        "caplog": caplog.text,
        "stdout and stderr": captured.out + captured.err,
    }
    for secret in secrets:
        assert [where for where, text in shown.items() if secret in text] == []


def test_a_plan_reads_no_secret_and_compares_none(
    empty: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not even defined: a plan (a review step, a drift check) never reads Airflow's secrets.
    monkeypatch.delenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", raising=False)
    monkeypatch.delenv(f"AIRFLOW_VAR_{VARIABLE.upper()}", raising=False)
    with empty.state.lock:  # the platform holds it already, made out of band with the values
        when = empty.state.now() - timedelta(minutes=5)
        connection = {"host": "db", "user": "svc", "password": "***", "role": "dba-1", "database": "sales-1"}
        workspace(empty).data_sources["ds_kept"] = DataSourceRecord(
            "ds_kept", "warehouse-kept", "postgres", connection, when
        )
    given = referring()
    plan = plan_definitions(hook, {"data_sources": given["data_sources"]})
    (change,) = (item for item in plan.to_dict()["changes"] if item["name"] == "warehouse-kept")
    assert change["action"] == "unchanged"
    unseen = ", ".join(f"connection.{key}" for key in ("user", "password", "role", "database"))
    assert change["detail"] == f"ds_kept; not compared: {unseen}"
    again = plan_definitions(hook, {"data_sources": referring()["data_sources"]})
    assert again.to_dict() == plan.to_dict()  # the digest too: it never depends on what Airflow holds


def test_a_retry_sends_the_first_try_s_idempotency_key_whatever_airflow_holds_now(
    empty: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    first_password, _, _ = kept_in_airflow(monkeypatch)
    operator = ApplyDefinitionsOperator(task_id="apply", definitions=referring())
    operator.execute(make_context())
    (first,) = (entry for entry in writes(empty) if entry.path == "/v1/data-sources")
    assert held(empty, "warehouse-kept").connection["user"] == "svc"
    assert sent_exactly(empty, {**held(empty, "warehouse-kept").connection, "password": first_password})
    with empty.state.lock:  # gone on the platform, so the retry plans the create again
        workspace(empty).charts.clear()
        workspace(empty).data_sources.clear()
    kept_in_airflow(monkeypatch)  # rotated in Airflow meanwhile
    before = len(empty.state.requests)
    with pytest.raises(ConflictError):  # the same key with another body: the platform's 409, not a second object
        operator.execute(make_context())
    (retried,) = (entry for entry in writes(empty, before) if entry.path == "/v1/data-sources")
    assert retried.headers["idempotency-key"] == first.headers["idempotency-key"]


def test_a_missing_connection_variable_or_field_fails_before_any_write(
    empty: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept_in_airflow(monkeypatch)
    monkeypatch.delenv("AIRFLOW_VAR_ANALYTICS_NOWHERE_VAR", raising=False)
    monkeypatch.delenv("AIRFLOW_CONN_ANALYTICS_NOWHERE_DB", raising=False)
    given = referring()
    given["data_sources"].append(
        {
            "name": "elsewhere",
            "type": "postgres",
            "connection": {
                "password": {"from_connection": "analytics_nowhere_db"},
                "role": {"from_connection": CONN_ID, "field": "paswsord"},
            },
        }
    )
    operator = ApplyDefinitionsOperator(task_id="apply", definitions=given, retries=3)
    with pytest.raises(FinalFailure) as caught:
        operator.execute(make_context())
    assert writes(empty) == []
    message = str(caught.value)
    assert "nothing was changed on the platform" in message
    where = "definitions: data_sources[1] 'elsewhere'"
    assert (
        f"{where}: connection.password: reads field 'password' of Airflow connection 'analytics_nowhere_db', which"
        " is not"
    ) in message
    assert f"{where}: connection.role: reads field 'paswsord' of Airflow connection {CONN_ID!r}, which has no" in (
        message
    )
    assert "did you mean 'password'?" in message
    assert "warehouse-kept" not in message  # its references were read: nothing to say about it


@broken_in_airflow(
    "3.0",
    "Airflow 3.0's Variable.get outside a task's process (the operator run directly, as here) raises ImportError "
    "for a variable no secrets backend holds instead of returning the default; a task asks its supervisor",
)
def test_a_missing_variable_fails_before_any_write(empty: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    kept_in_airflow(monkeypatch)
    monkeypatch.delenv("AIRFLOW_VAR_ANALYTICS_NOWHERE_VAR", raising=False)
    given = referring()
    given["data_sources"].append(
        {
            "name": "elsewhere",
            "type": "postgres",
            "connection": {"database": {"from_variable": "analytics_nowhere_var"}},
        }
    )
    operator = ApplyDefinitionsOperator(task_id="apply", definitions=given, retries=3)
    with pytest.raises(FinalFailure) as caught:
        operator.execute(make_context())
    assert writes(empty) == []
    assert (
        "definitions: data_sources[1] 'elsewhere': connection.database: reads Airflow variable"
        " 'analytics_nowhere_var', which is not defined"
    ) in str(caught.value)


def test_malformed_references_are_refused_when_loading(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    connection = {
        "password": {"from_connection": "db", "from_variable": "pw"},
        "user": {"from_connection": "db", "feild": "login"},
        "token": {"from_variable": "tok", "field": "password"},
        "host": {"from_connection": " "},
        "port": {"from_connection": 5432},
        "schema": {"from_connection": "db", "field": ["schema"]},
        "options": {"auth": {"from_variable": "pw"}},
        "sslcert": {"form_variable": "cert"},
    }
    source = {"name": "warehouse", "type": "postgres", "connection": copy.deepcopy(connection)}
    path = write_file(tmp_path, "sources.yaml", {"data_sources": [source]})
    where = f"{path}: data_sources[0] 'warehouse': connection"
    assert refused(hook, sandbox, path) == [
        f"{where}.password: has both from_connection and from_variable; a reference reads one: keep one",
        f"{where}.user.feild: is not a known field of a secret reference; the fields are from_connection and field,"
        " or from_variable; did you mean 'field'?",
        f"{where}.token.field: goes with from_connection only (a variable holds one value)",
        f"{where}.host.from_connection: must not be empty: give an Airflow connection's id",
        f"{where}.port.from_connection: must be an Airflow connection's id (a string), got int",
        f"{where}.schema.field: must be one of password, login, host, port, schema, or a key of the connection's"
        " extra (a string), got a list",
        f"{where}.options.auth: a reference to an Airflow secret is read only as a connection's own field"
        " (connection.<name>: {from_connection: ...}), not inside another value; move it up",
        f"{where}.sslcert.form_variable: is not a secret reference's field; did you mean 'from_variable'?",
    ]
