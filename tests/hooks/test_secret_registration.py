"""Every secret value the provider is handed (a data source's connection fields, values under secret-looking keys
in chart options and workflow configuration) is hidden before it is sent: a platform that echoes it in a 422
shows it in no exception and no log line, and Airflow's secrets masker hides it in every other line."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import redact

from airflow_provider_analytics.connection._masking import MASKED_BYTES_LIMIT
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.data_sources import ConnectDataSourceOperator
from airflow_provider_analytics.operators.errors import FinalFailure
from airflow_provider_analytics.operators.reports import GenerateReportOperator
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire._redaction import scrub_text
from airflow_provider_analytics.wire._secret_rule import is_secret_key
from airflow_provider_analytics.wire.errors import AnalyticsInputError, InvalidRequestError
from tests.support.connections import api_requests, whole_text
from tests.support.context import make_context
from tests.support.names import JSON_HEADERS, WORKFLOW


def unique_secret(label: str) -> str:
    """A value no earlier test registered: registration lasts for the process, so a reused one proves nothing."""
    return f"{label}-{uuid.uuid4().hex[:12]}"


def refusal_echoing(connection: dict[str, Any], path: str = "/v1/data-sources$") -> Fault:
    """A 422 that repeats what was sent whole, as a careless platform's driver error would."""
    body = {"error": {"type": "invalid_request", "message": f"cannot connect to {connection}", "details": connection}}
    return Fault.respond(422, headers=JSON_HEADERS, body=json.dumps(body), method="POST", path=path)


def assert_hidden(secret: str, *texts: object) -> None:
    for text in texts:
        assert secret not in str(text)
    assert secret not in redact(f"a log line with {secret} in it")  # Airflow's masker hides it too
    assert secret not in scrub_text(f"a platform text with {secret} in it")


def test_a_password_a_422_echoes_is_in_no_error_of_the_operator(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    password, key = unique_secret("pw"), unique_secret("key")
    connection = {"host": "db", "user": "svc", "password": password, "options": {"sslkey": key}}
    sandbox.state.inject(refusal_echoing(connection))
    operator = ConnectDataSourceOperator(task_id="connect", name="warehouse", type="postgres", connection=connection)
    with caplog.at_level(logging.DEBUG), pytest.raises(FinalFailure) as caught:
        operator.execute(make_context())
    refusal = caught.value.error
    assert isinstance(refusal, InvalidRequestError)
    assert "cannot connect to {'host': 'db', 'user': 'svc', 'password': '***'" in str(refusal)  # the rest is legible
    assert_hidden(password, whole_text(caught.value), refusal.details, caplog.text)
    assert_hidden(key, whole_text(caught.value))
    (sent,) = api_requests(sandbox, "/v1/data-sources")
    assert sent.status == 422  # it was really sent, and refused


def test_a_password_in_a_dsn_and_secrets_in_options_and_configuration(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    dsn_password, api_token, nested = unique_secret("dsnpw"), unique_secret("tok"), unique_secret("deep")
    dsn = f"postgres://svc:{dsn_password}@db:5432/sales"
    sandbox.state.inject(refusal_echoing({"url": dsn}))
    with pytest.raises(InvalidRequestError) as caught:
        hook.connect_data_source("warehouse", "postgres", {"url": dsn})
    assert "postgres://svc:***@db:5432/sales" in str(caught.value)
    assert_hidden(dsn_password, whole_text(caught.value))
    # Secret-looking keys in any section, at any depth, are registered as they are sent.
    hook.create_workflow("wf-secret", {"steps": [{"auth": {"client_secret": nested}}], "api_token": api_token})
    assert_hidden(api_token)
    assert_hidden(nested)


@pytest.mark.parametrize("starts", ["execution", "report"])
def test_a_secret_in_an_executions_inputs_or_a_reports_parameters_is_in_no_error(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture, starts: str
) -> None:
    token = unique_secret("in")
    sent = {"region": "eu", "auth": {"api_token": token}}
    operator: ExecuteWorkflowOperator | GenerateReportOperator
    if starts == "execution":
        sandbox.state.inject(refusal_echoing(sent, f"/v1/workflows/{WORKFLOW}/execute$"))
        operator = ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, inputs=sent)
    else:
        sandbox.state.inject(refusal_echoing(sent, "/v1/reports$"))
        operator = GenerateReportOperator(task_id="report", dashboard_names=["Sales"], parameters=sent)
    with caplog.at_level(logging.DEBUG), pytest.raises(FinalFailure) as caught:
        operator.execute(make_context())
    assert isinstance(caught.value.error, InvalidRequestError)
    assert "'region': 'eu'" in str(caught.value.error)  # what is not secret stays legible
    assert_hidden(token, whole_text(caught.value), caught.value.error.details, caplog.text)


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("password", True),
        ("api_token", True),
        ("X-Api-Key", True),
        ("client_secret", True),
        ("sslkey", True),
        ("PRIVATE_KEY", True),
        ("dsn", True),
        ("db_pass", True),
        ("dbPass", True),
        ("user_pin", True),
        ("totp_seed", True),
        ("session_id", True),
        ("sshKey", True),
        ("auth", False),
        ("bypass", False),
        ("spinner", False),
        ("passenger", False),
        ("oauth_scopes", False),
        ("host", False),
        ("user", False),
        ("port", False),
        ("sslmode", False),
        ("database", False),
    ],
)
def test_the_one_rule_for_secret_keys(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


@pytest.mark.parametrize(
    ("configuration", "secret"),
    [
        ({"params": [["user", "svc"], ["password", "pair-Pw-1a2b3c"]]}, "pair-Pw-1a2b3c"),
        ({"headers": [{"name": "X-Api-Key", "value": "named-Key-4d5e6f"}]}, "named-Key-4d5e6f"),
        ({"target": "host=db user=svc password=dsn-Pw-7a8b9c dbname=sales"}, "dsn-Pw-7a8b9c"),
        ({"target": "Driver={x};Server=db;PWD={odbc;Pw-0d1e2f};"}, "odbc;Pw-0d1e2f"),
        ({"proxy": {"host": "proxy-host-3a4b5c", "port": 3128}}, "proxy-host-3a4b5c"),  # the whole value
        ({"files": [{"name": "token", "content": "content-Tok-4e5f6a"}]}, "content-Tok-4e5f6a"),
        ({"mfa": {"user_pin": "pin-7c8d9e", "db_pass": "db-Pass-1b2c3d"}}, "db-Pass-1b2c3d"),
    ],
)
def test_pairs_named_values_and_dsn_passwords_are_secret_too(
    sandbox: SandboxServer, hook: AnalyticsHook, configuration: dict[str, Any], secret: str
) -> None:
    sandbox.state.inject(refusal_echoing(configuration, "/v1/workflows$"))
    with pytest.raises(InvalidRequestError) as caught:
        hook.create_workflow(f"wf-{uuid.uuid4().hex[:8]}", configuration)
    assert_hidden(secret, whole_text(caught.value), caught.value.details)


@pytest.mark.parametrize(
    "configuration",
    [
        {"query": "select * from users where password = 'plain-Text-9z8y'"},  # SQL, not a DSN
        {"redact_fields": ["password", "plain-Text-9z8y"]},  # a list of names, not of pairs
        {"columns": [{"name": "plain-Text-9z8y", "value": 1}]},  # a name that names no secret
    ],
)
def test_what_only_looks_like_a_secret_stays_legible(
    sandbox: SandboxServer, hook: AnalyticsHook, configuration: dict[str, Any]
) -> None:
    sandbox.state.inject(refusal_echoing(configuration, "/v1/workflows$"))
    with pytest.raises(InvalidRequestError) as caught:
        hook.create_workflow(f"wf-{uuid.uuid4().hex[:8]}", configuration)
    assert "plain-Text-9z8y" in str(caught.value)


def test_a_secret_airflow_s_masker_could_not_hold_is_refused_before_it_is_sent(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    # Airflow 2.11's masker fails on a pattern of about 700 KB, and then masks nothing new: refused on every release.
    secret = unique_secret("big") + "k" * MASKED_BYTES_LIMIT
    before = len(sandbox.state.requests)

    with pytest.raises(AnalyticsInputError, match="would bring the secrets this process hands Airflow's secrets"):
        hook.create_workflow("big-secret", {"steps": [], "api_token": secret})

    assert sandbox.state.requests[before:] == []
    assert scrub_text(f"a text with {secret}") == "a text with ***"  # the provider's scrubber still hides it
    kept = unique_secret("kept")  # and the masker still takes the next one
    hook.create_workflow("small-secret", {"steps": [], "api_token": kept})
    assert_hidden(kept)


def test_secrets_whose_masking_would_take_minutes_are_refused_at_once_before_anything_is_sent(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    # Airflow's masker compiles all it holds again for each new secret: 2,000 of 32 characters took 186 s.
    many = {f"api_token_{index}": unique_secret(f"s{index:04}") + "x" * 16 for index in range(2000)}
    before = len(sandbox.state.requests)

    with pytest.raises(AnalyticsInputError, match=r"2,000 new secret values of .* bytes at once") as caught:
        hook.create_workflow("many-secrets", {"steps": [], **many})

    assert sandbox.state.requests[before:] == []
    assert "split the definitions over tasks" in str(caught.value)
    assert not any(secret in str(caught.value) for secret in many.values())
    assert scrub_text(f"a text with {many['api_token_7']}") == "a text with ***"  # the scrubber still hides them


def test_a_hundred_secrets_at_once_are_masked_by_airflow_s_masker_too(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    # A definitions file with a hundred data sources' passwords is within the bound (a few seconds at most).
    many = {f"api_token_{index}": unique_secret(f"key{index:03}") for index in range(100)}  # k: never JSON syntax

    hook.create_workflow(f"hundred-{uuid.uuid4().hex[:8]}", {"steps": [], **many})

    assert_hidden(many["api_token_0"])
    assert_hidden(many["api_token_99"])
