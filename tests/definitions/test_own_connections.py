"""A definition never reads the connections the provider itself uses, against the sandbox: the analytics connection
(its password is the platform's API token) and its rate limit store's are refused by the default allow-list and by
any wildcard, before any request; only a ``secret_sources`` that names such an id exactly admits it. An export never
writes a reference to one (a data source named ``Default`` would have given ``analytics_default``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.hooks._definitions import own_connections
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator
from airflow_provider_analytics.operators.errors import FinalFailure
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.definitions.helpers import workspace
from tests.definitions.test_export_trust import export_to, plant
from tests.support.connections import conn
from tests.support.context import make_context


def reading(conn_id: str, field: str = "password") -> dict[str, Any]:
    """A data source on a host of the file author's choosing, whose password is read from ``conn_id``."""
    connection = {"host": "collector.example", "user": "x", "password": {"from_connection": conn_id, "field": field}}
    return {"data_sources": [{"name": "exfil", "type": "postgres", "connection": connection}]}


def with_extra(
    monkeypatch: pytest.MonkeyPatch, sandbox: SandboxServer, conn_id: str = "analytics_default", **extra: Any
) -> None:
    connection = json.loads(sandbox.connection_json())
    connection["extra"].update(extra)
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(connection))


@pytest.mark.parametrize("field", ["password", "ui_url"])
def test_the_default_allow_list_refuses_the_analytics_connection_before_any_request(
    empty: SandboxServer, field: str
) -> None:
    operator = ApplyDefinitionsOperator(task_id="apply", definitions=reading("analytics_default", field), retries=3)

    with pytest.raises(FinalFailure) as caught:
        operator.execute(make_context())

    assert empty.state.requests == []
    assert f"refers to field {field!r} of Airflow connection 'analytics_default', a connection this provider" in str(
        caught.value
    )
    assert "name this id exactly (not by a wildcard)" in str(caught.value)
    assert empty.token not in str(caught.value)


@pytest.mark.parametrize("spelling", ["analytics_DEFAULT", "Analytics_Default", "ANALYTICS-DEFAULT"])
def test_the_analytics_connection_is_refused_by_any_spelling_a_secrets_backend_reads_as_it(
    empty: SandboxServer, spelling: str
) -> None:
    """Airflow's environment variables upper-case the id (AIRFLOW_CONN_ANALYTICS_DEFAULT answers every case), Azure
    Key Vault ignores case and reads '_' as '-': an outside pass had the token sent by writing analytics_DEFAULT."""
    operator = ApplyDefinitionsOperator(task_id="apply", definitions=reading(spelling), retries=3)

    with pytest.raises(FinalFailure) as caught:
        operator.execute(make_context())

    assert empty.state.requests == []
    assert f"Airflow connection '{spelling}', a connection this provider itself uses" in str(caught.value)
    assert empty.token not in str(caught.value)


def test_no_wildcard_admits_the_connection_the_hook_uses_only_its_exact_id_does(
    empty: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_extra(monkeypatch, empty, "analytics_prod", secret_sources=["*"])
    with_extra(monkeypatch, empty)
    with AnalyticsHook(analytics_conn_id="analytics_prod") as hook:
        for own in ("analytics_prod", "analytics_default"):
            with pytest.raises(AnalyticsInputError, match=f"Airflow connection '{own}', a connection this provider"):
                hook.plan_definitions(reading(own))
        assert empty.state.requests == []

    with_extra(monkeypatch, empty, "analytics_prod", secret_sources=["analytics_prod"])
    with AnalyticsHook(analytics_conn_id="analytics_prod") as hook:
        plan = hook.plan_definitions(reading("analytics_prod"))  # the deployment named it, exactly
    assert plan.secrets == [
        {
            "kind": "data_source",
            "name": "exfil",
            "at": "connection.password",
            "connection": "analytics_prod",
            "field": "password",
        }
    ]


def test_the_provider_s_own_connections_are_the_analytics_one_and_its_store_s() -> None:
    analytics = conn(conn_id="analytics_prod", extra={"rate_limit_redis_conn_id": "analytics_limits"})

    assert own_connections(analytics) == {"analytics_default", "analytics_prod", "analytics_limits"}
    assert own_connections(conn(conn_id="analytics_default")) == {"analytics_default"}


def test_an_export_never_refers_to_the_provider_s_own_connection(
    empty: SandboxServer, hook: AnalyticsHook, tmp_path: Path
) -> None:
    plant(empty, ds_evil=("data_source", "Default", {"host": "db", "user": "svc"}))

    export_to(tmp_path, names=["Default"])

    text = (tmp_path / "data_sources.yaml").read_text(encoding="utf-8")
    assert "from_connection: analytics_default_ds_evil" in text
    assert "from_connection: analytics_default\n" not in text
    plan = hook.plan_definitions(f"{tmp_path}/*.yaml")  # the default allow-list admits what it wrote
    assert [read["connection"] for read in plan.secrets] == []  # unchanged: nothing would be read
    assert [change.action for change in plan.changes if change.name == "Default"] == ["unchanged"]
    with empty.state.lock:
        assert [record.name for record in workspace(empty).data_sources.values()] == ["Default"]


def test_another_analytics_connection_is_read_only_when_named_exactly(
    empty: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another workspace's API token, in a connection of the provider's type that analytics_* matches.
    other = {"conn_type": "analytics", "host": "https://other.example", "password": "prod-Token-1f2e3d4c"}
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_PROD", json.dumps(other))
    with AnalyticsHook() as hook:
        plan = hook.plan_definitions(reading("analytics_prod"))
        with pytest.raises(AnalyticsInputError, match="'analytics_prod', an 'analytics' connection: it holds an API"):
            hook.apply_plan(plan, key_seed="other-token")
    assert [entry.method for entry in empty.state.requests] == ["GET"] * 4  # the plan's listings, no write

    with_extra(monkeypatch, empty, secret_sources=["analytics_*", "analytics_prod"])
    with AnalyticsHook() as hook:
        document = reading("analytics_prod")
        document["data_sources"][0]["connection"]["database"] = "sales"
        hook.apply_plan(hook.plan_definitions(document), key_seed="named-exactly")
    (record,) = workspace(empty).data_sources.values()
    assert record.name == "exfil"
