"""Secrets in definitions: values under secret-looking keys (a workflow's ``api_token``, a chart's nested
``password``) show in neither the plan's table nor its XCom value, only whether they changed; and every secret
is registered with the wire scrubber and Airflow's masker before the plan's first request."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import redact

from airflow_provider_analytics.definitions._apply import plan_definitions
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.domain.records import ChartRecord, WorkflowRecord
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire._redaction import scrub_text
from airflow_provider_analytics.wire.errors import InvalidRequestError
from tests.definitions.helpers import actions, workspace
from tests.support.names import JSON_HEADERS


def unique_secret(label: str) -> str:
    """A value no earlier test registered (registration lasts for the process)."""
    return f"{label}-{uuid.uuid4().hex[:12]}"


def held_by_the_platform(sandbox: SandboxServer, configuration: dict[str, Any], options: dict[str, Any]) -> str:
    """A workflow and a chart made on the platform out of band (never through the provider, so never registered);
    returns the chart's data source id."""
    with sandbox.state.lock:
        records = workspace(sandbox)
        when = sandbox.state.now() - timedelta(minutes=5)
        records.workflows["wf_secretive"] = WorkflowRecord("wf_secretive", "secretive", "", configuration, when, when)
        source = next(iter(records.data_sources))
        records.charts["ch_secretive"] = ChartRecord(
            "ch_secretive", "Secretive", "line", source, "select 1", options, when, when
        )
    return source


def test_a_changed_secret_shows_only_as_changed(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    labels = ("old", "new", "opw", "npw", "kp", "odsn", "ndsn")
    old_token, new_token, old_pw, new_pw, kept, old_dsn, new_dsn = (unique_secret(label) for label in labels)
    source = held_by_the_platform(
        sandbox,
        {"steps": [], "api_token": old_token, "source": f"postgres://svc:{old_dsn}@db/sales"},
        {"stacked": False, "auth": {"user": "svc", "password": old_pw, "client_secret": kept}},
    )
    plan = plan_definitions(
        hook,
        {
            "workflows": [
                {
                    "name": "secretive",
                    "configuration": {
                        "steps": [],
                        "api_token": new_token,
                        "source": f"postgres://svc:{new_dsn}@db/sales",
                    },
                }
            ],
            "charts": [
                {
                    "name": "Secretive",
                    "type": "line",
                    "data_source": source,
                    "query": "select 1",
                    "options": {"stacked": True, "auth": {"user": "svc", "password": new_pw, "client_secret": kept}},
                }
            ],
        },
    )
    assert ("workflow", "secretive", "cannot_apply") in actions(plan)
    assert ("chart", "Secretive", "cannot_apply") in actions(plan)
    table, xcom = plan.table(), json.dumps(plan.to_dict())
    for secret in (old_token, new_token, old_pw, new_pw, kept, old_dsn, new_dsn):
        assert secret not in table
        assert secret not in xcom
    (workflow,) = (change for change in plan.to_dict()["changes"] if change["name"] == "secretive")
    shown = {"steps": [], "api_token": "(secret changed)", "source": "postgres://svc:***@db/sales"}
    assert workflow["fields"] == [{"field": "configuration", "before": shown, "after": shown}]
    assert "configuration: (secret changed)" in workflow["detail"]
    (chart,) = (change for change in plan.to_dict()["changes"] if change["name"] == "Secretive")
    auth = {"user": "svc", "password": "(secret changed)", "client_secret": "(secret)"}
    assert chart["fields"] == [
        {"field": "options", "before": {"stacked": False, "auth": auth}, "after": {"stacked": True, "auth": auth}}
    ]


def test_the_same_secret_on_both_sides_is_unchanged(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    # The plan registers the definitions' secrets first, so the platform's listing comes back with them masked:
    # compared as seen, the same secret (under a secret key, or as a URL's password) is no difference.
    token, password = unique_secret("same"), unique_secret("pw")
    configuration = {"api_token": token, "source": f"postgres://svc:{password}@db/sales"}
    source = held_by_the_platform(sandbox, configuration, {"auth": {"password": password}})
    chart = {"name": "Secretive", "type": "line", "data_source": source, "query": "select 1"}
    plan = plan_definitions(
        hook,
        {
            "workflows": [{"name": "secretive", "configuration": configuration}],
            "charts": [{**chart, "options": {"auth": {"password": password}}}],
        },
    )
    assert ("workflow", "secretive", "unchanged") in actions(plan)
    assert ("chart", "Secretive", "unchanged") in actions(plan)


def test_secrets_are_registered_before_the_first_request(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    password, token, dsn_password = unique_secret("pw"), unique_secret("tok"), unique_secret("dsn")
    # The first listing is refused: whatever the plan registers, it registered before any answer came.
    sandbox.state.inject(
        Fault.respond(400, headers=JSON_HEADERS, body='{"error": {"type": "invalid_request", "message": "no"}}')
    )
    source = {"name": "wh", "type": "postgres", "connection": {"host": "db", "password": password}}
    workflow = {"name": "w", "configuration": {"steps": [{"env": {"url": f"https://u:{dsn_password}@h/x"}}]}}
    chart = {"name": "c", "type": "line", "data_source": "wh", "query": "q", "options": {"api_token": token}}
    with pytest.raises(InvalidRequestError):
        plan_definitions(hook, {"data_sources": [source], "workflows": [workflow], "charts": [chart]})
    assert len(sandbox.state.requests) == 1
    for secret in (password, token, dsn_password):
        assert secret not in redact(f"a task log line with {secret}")
        assert secret not in scrub_text(f"a platform answer with {secret}")
