"""Which Airflow secrets an apply may send, against the sandbox: a reference may name only the connections and
variables the deployment allowed (``analytics_*`` by default; the analytics connection's extra ``secret_sources``
replaces that), and any other fails the plan before any request, naming the reference, the file and the setting;
an apply checks again before it reads anything, whatever its plan was made with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.connection._config import client_config_from_connection
from airflow_provider_analytics.definitions._allowed import SecretSources
from airflow_provider_analytics.definitions._apply import plan_definitions
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator
from airflow_provider_analytics.operators.errors import FinalFailure
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.definitions.helpers import workspace, write_file, writes
from tests.support.connections import conn, uri_connection
from tests.support.context import make_context
from tests.support.names import CONN_ENV

AWS_PASSWORD = "aws-Secret-Key-77aa66bb55cc"
WAREHOUSE_PASSWORD = "wh-Secret-Key-11dd22ee33ff"


def airflow_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Airflow's connections: the one every AWS task uses, and a warehouse's."""
    for conn_id, password in (("aws_default", AWS_PASSWORD), ("warehouse_db", WAREHOUSE_PASSWORD)):
        monkeypatch.setenv(
            f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "generic", "password": password})
        )


def with_secret_sources(monkeypatch: pytest.MonkeyPatch, sandbox: SandboxServer, value: Any) -> None:
    """The analytics connection with the extra ``secret_sources`` set to ``value``."""
    connection = json.loads(sandbox.connection_json())
    connection["extra"]["secret_sources"] = value
    monkeypatch.setenv(CONN_ENV, json.dumps(connection))


def wanting(*conn_ids: str) -> dict[str, Any]:
    """A workflow whose configuration, and a data source whose password, each read one of ``conn_ids``."""
    first, second = (conn_ids * 2)[:2]
    configuration = {"steps": [], "auth": {"api_token": {"from_connection": first, "field": "password"}}}
    connection = {"project": "p", "password": {"from_connection": second}}
    return {
        "workflows": [{"name": "wants-secrets", "configuration": configuration}],
        "data_sources": [{"name": "wants-secrets", "type": "bigquery", "connection": connection}],
    }


def test_a_reference_to_a_secret_the_deployment_did_not_allow_fails_the_plan_before_any_request(
    empty: SandboxServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    airflow_holds(monkeypatch)
    path = write_file(tmp_path, "secrets.yaml", wanting("aws_default"))
    operator = ApplyDefinitionsOperator(task_id="apply", definitions=str(path), retries=3)

    with pytest.raises(FinalFailure) as caught:  # an input error: no retry would read it otherwise
        operator.execute(make_context())

    assert empty.state.requests == []
    message = str(caught.value)
    setting = "analytics_* (the default: connection 'analytics_default' sets no extra 'secret_sources')"
    for where in ("workflows[0] 'wants-secrets': configuration.auth.api_token", "data_sources[0] 'wants-secrets'"):
        assert f"{path}: {where}" in message
    assert "refers to field 'password' of Airflow connection 'aws_default', which the deployment does not let" in (
        message
    )
    assert f"references may name {setting}" in message
    assert "extra secret_sources" in message
    assert AWS_PASSWORD not in message


def test_the_connection_s_secret_sources_replace_the_default(
    empty: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    airflow_holds(monkeypatch)
    with_secret_sources(monkeypatch, empty, ["warehouse_*"])

    with pytest.raises(FinalFailure, match="references may name warehouse_\\* \\(the extra 'secret_sources' of"):
        ApplyDefinitionsOperator(task_id="apply", definitions=wanting("analytics_x")).execute(make_context())
    assert empty.state.requests == []

    result = ApplyDefinitionsOperator(task_id="apply", definitions=wanting("warehouse_db")).execute(make_context())
    assert result["applied"]["counts"]["create"] == 2
    (workflow,) = workspace(empty).workflows.values()
    assert workflow.configuration["auth"]["api_token"] == WAREHOUSE_PASSWORD  # read, as allowed, and sent


def test_an_apply_checks_the_deployment_s_sources_whatever_its_plan_was_made_with(
    empty: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    airflow_holds(monkeypatch)
    plan = plan_definitions(hook, wanting("aws_default"), secret_sources=SecretSources(("*",), "a test's"))
    before = len(empty.state.requests)

    with pytest.raises(AnalyticsInputError, match="Airflow connection 'aws_default', which the deployment does not"):
        hook.apply_plan(plan)  # the hook's connection sets no secret_sources: the default

    assert writes(empty, before) == []


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (5, "got 5"),
        ({"analytics_*": True}, 'got {"analytics_*": true}'),
        (["analytics_*", 3], 'got ["analytics_*", 3]'),
        (["analytics_*", ""], "has the pattern ''"),
        (["has space"], "has the pattern 'has space'"),
        ("[not json", "is not valid JSON"),
        (["x"] * 101, "at most 100"),
    ],
)
def test_a_malformed_secret_sources_fails_when_the_connection_is_read(value: Any, says: str) -> None:
    bad = conn(host="https://api.example.com", password="tok-0123456789", extra={"secret_sources": value})
    with pytest.raises(AnalyticsInputError) as caught:
        client_config_from_connection(bad)
    assert str(caught.value).startswith("connection 'analytics_test': extra 'secret_sources' ")
    assert says in str(caught.value)


@pytest.mark.parametrize(
    ("value", "patterns"),
    [
        (["analytics_*", "warehouse_db"], ("analytics_*", "warehouse_db")),
        ('["analytics_*", "warehouse_db"]', ("analytics_*", "warehouse_db")),
        ("analytics_*, warehouse_db", ("analytics_*", "warehouse_db")),
        ([], ()),  # nothing allowed: no reference at all
        ("", None),  # unset: the default
    ],
)
def test_secret_sources_is_a_list_or_its_text(
    sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch, value: Any, patterns: tuple[str, ...] | None
) -> None:
    from airflow_provider_analytics.hooks._definitions import secret_sources

    with_secret_sources(monkeypatch, sandbox, value)
    with AnalyticsHook() as hook:
        allowed = secret_sources(hook.connection)
    assert allowed.patterns == (("analytics_*",) if patterns is None else patterns)


def test_secret_sources_in_a_uri_connection() -> None:
    from airflow_provider_analytics.hooks._definitions import secret_sources

    uri = "analytics://:tok-0123456789@api.example.com?secret_sources=analytics_%2A%2Cwarehouse_db"
    connection = uri_connection(uri)
    client_config_from_connection(connection)  # a valid connection
    assert secret_sources(connection).patterns == ("analytics_*", "warehouse_db")


@pytest.mark.parametrize(
    ("name", "patterns", "allowed"),
    [
        ("analytics_x/../aws_default", ("analytics_*",), False),  # a backend may read it as a path
        ("analytics_x..aws_default", ("analytics_*",), False),
        ("analytics_team/db", ("analytics_*",), False),
        ("analytics_team/db", ("analytics_team/db",), True),  # named exactly, it is the deployment's choice
        ("analytics_warehouse.eu-1", ("analytics_*",), True),
        ("Analytics_x", ("analytics_*",), False),  # case-sensitive, as the patterns are written
    ],
)
def test_a_wildcard_matches_only_plain_names(
    empty: SandboxServer, monkeypatch: pytest.MonkeyPatch, name: str, patterns: tuple[str, ...], allowed: bool
) -> None:
    with_secret_sources(monkeypatch, empty, list(patterns))
    document = {"workflows": [{"name": "w", "configuration": {"key": {"from_variable": name}}}]}
    operator = ApplyDefinitionsOperator(task_id="plan", definitions=document, plan_only=True)
    if allowed:
        assert operator.execute(make_context())["plan"]["secrets"][0]["variable"] == name
    else:
        with pytest.raises(FinalFailure, match="which the deployment does not let definitions read"):
            operator.execute(make_context())
        assert empty.state.requests == []
