"""What a new user met (issue 25): misspelled extras, a token pasted with ``Bearer``, Airflow's random test id.

An unknown extra is a warning, not an error (connections outlive provider versions): logged once per connection
in a process, naming the connection and the nearest known extra. A ``Bearer`` prefix is removed with a warning.
Under the random id Airflow's REST API tests a connection with, messages say "this connection".
"""

from __future__ import annotations

import logging
import uuid
from typing import Any
from urllib.parse import quote

import pytest

from airflow_provider_analytics.connection import _notes
from airflow_provider_analytics.connection._config import client_config_from_connection
from airflow_provider_analytics.connection._form import connection_type_info
from airflow_provider_analytics.connection._notes import (
    connection_name,
    is_generated_test_id,
    known_extras,
    not_the_api,
    with_notes,
)
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.support.connections import (
    BOGUS_TOKEN,
    api_requests,
    conn,
    new_hook,
    set_json_connection,
    uri_connection,
)
from tests.support.hostile import HostileServer, Script, json_script

HOST = "https://api.example.com"
TOKEN = "tok-rough-edges-0123456789"
LOGGER = _notes.__name__  # where the notes are logged
# What Airflow 3's web server answers on any path it does not route (its UI's page), with 200.
PAGE = b"<!doctype html><html><head><title>Airflow</title></head><body><div id=root></div></body></html>"
HTML = Script(b"HTTP/1.1 200 OK", (b"Content-Type: text/html; charset=utf-8", b"Content-Length: %d" % len(PAGE)), PAGE)


def fresh_id() -> str:
    """A connection id no other test used: the warnings are logged once per connection in the process."""
    return f"analytics_{uuid.uuid4().hex[:12]}"


def warnings_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == LOGGER and record.levelname == "WARNING"]


# One value per extra that the hook refuses, naming the extra: proof that it reads every field the form has.
BAD_VALUES = {
    "workspace_id": "not an id!",
    "timeout": "soon",
    "max_retries": 2.5,
    "max_response_bytes": 10,
    "max_download_bytes": "lots",
    "min_download_rate": -1,
    "verify": "/no/such/ca.pem",
    "ui_url": "ftp://ui.example.com",
    "secret_sources": {"analytics_*": True},
    "allow_insecure_http": "maybe",
    "rate_limit_redis_conn_id": "not a connection id!",
}


def test_the_known_extras_are_the_form_fields() -> None:
    assert known_extras() == tuple(connection_type_info("analytics")["conn-fields"])
    assert set(BAD_VALUES) == set(known_extras())


@pytest.mark.parametrize("key", sorted(BAD_VALUES))
def test_every_known_extra_is_read(key: str) -> None:
    with pytest.raises(AnalyticsInputError, match=key):
        client_config_from_connection(conn(host=HOST, password=TOKEN, extra={key: BAD_VALUES[key]}))


def test_known_extras_log_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    extra = {"workspace_id": "ws_marketing", "timeout": 5, "verify": "false", "ui_url": HOST, "max_retries": 1}
    client_config_from_connection(conn(conn_id=fresh_id(), host=HOST, password=TOKEN, extra=extra))
    assert warnings_logged(caplog) == []


@pytest.mark.parametrize(
    ("key", "advice"),
    [
        ("workspace", "did you mean 'workspace_id'?"),
        ("time_out", "did you mean 'timeout'?"),
        ("Timeout", "did you mean 'timeout'?"),
        ("verify_ssl", "did you mean 'verify'?"),
        ("extra__analytics__max_retries", "did you mean 'max_retries'?"),  # Airflow 2.2's form stored this
        ("api_key", "the API token goes in the password field"),
        ("colour", "the known extras are workspace_id, timeout, max_retries,"),
    ],
)
def test_an_unknown_extra_is_a_warning_naming_the_nearest_known_one(
    caplog: pytest.LogCaptureFixture, key: str, advice: str
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    conn_id = fresh_id()
    config = client_config_from_connection(conn(conn_id=conn_id, host=HOST, password=TOKEN, extra={key: "5"}))
    assert config.timeout == 30  # ignored, not read under a near name
    (warning,) = warnings_logged(caplog)
    assert f"Extra {key!r} of connection {conn_id!r} is not a setting of this provider and is ignored" in warning
    assert advice in warning


def test_an_unknown_extra_in_uri_form_is_named_too(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    conn_id = fresh_id()
    uri = f"analytics://:{quote(TOKEN, safe='')}@{quote(HOST, safe='')}?workspace=ws_marketing&timeout=5"
    config = client_config_from_connection(uri_connection(uri, conn_id))
    assert (config.workspace_id, config.timeout) == (None, 5)
    (warning,) = warnings_logged(caplog)
    assert f"Extra 'workspace' of connection {conn_id!r}" in warning
    assert "did you mean 'workspace_id'?" in warning


def test_the_warning_is_logged_once_per_connection_in_a_process(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    first, second = fresh_id(), fresh_id()
    for conn_id in (first, first, first, second, second):  # a hook per task, per trigger: built again and again
        client_config_from_connection(conn(conn_id=conn_id, host=HOST, password=TOKEN, extra={"time_out": 5}))
    assert [first in warning for warning in warnings_logged(caplog)] == [True, False]


def test_a_misspelled_extra_does_not_stop_the_hook(
    sandbox: SandboxServer,
    hooks: list[AnalyticsHook],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    conn_id = fresh_id()
    extra = {"workspace": "ws_marketing", "time_out": 0.5}
    set_json_connection(
        monkeypatch, f"AIRFLOW_CONN_{conn_id.upper()}", host=sandbox.base_url, password=sandbox.token, extra=extra
    )
    assert list(new_hook(hooks, conn_id).list_workflows())
    (request,) = api_requests(sandbox, "/v1/workflows")
    assert "x-workspace-id" not in request.headers  # what the misspelled name meant was not guessed
    assert [warning.split(":")[-1] for warning in warnings_logged(caplog)] == [
        " did you mean 'timeout'?",
        " did you mean 'workspace_id'?",
    ]


@pytest.mark.parametrize("prefix", ["Bearer ", "bearer ", "BEARER\t", "Bearer  "])
def test_a_token_pasted_with_its_bearer_prefix_is_sent_once(
    sandbox: SandboxServer,
    hooks: list[AnalyticsHook],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    prefix: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    conn_id = fresh_id()
    env = f"AIRFLOW_CONN_{conn_id.upper()}"
    set_json_connection(monkeypatch, env, host=sandbox.base_url, password=f"{prefix}{sandbox.token}\n")
    hook = new_hook(hooks, conn_id)
    list(hook.list_workflows())  # the sandbox answers 401 to "Bearer Bearer <token>"
    assert [request.status for request in api_requests(sandbox, "/v1/workflows")] == [200]
    (warning,) = warnings_logged(caplog)
    assert (
        warning
        == f"The API token of connection {conn_id!r} began with 'Bearer ': the prefix was removed (the hook adds it)."
    )
    assert sandbox.token not in caplog.text


def test_bearer_alone_is_no_token() -> None:
    with pytest.raises(AnalyticsInputError, match="has no API token: set it as the password"):
        client_config_from_connection(conn(host=HOST, password="Bearer "))


def random_test_id() -> str:
    """An id as Airflow's REST connection test makes one, with a capital letter (the 1.3% of random ids without
    one are named like any other id)."""
    from airflow.utils.strings import get_random_string  # what POST /api/v2/connections/test calls

    found: str = next(drawn for drawn in iter(get_random_string, None) if drawn != drawn.lower())
    return found


def test_only_airflows_random_test_id_with_its_variable_counts_as_generated(monkeypatch: pytest.MonkeyPatch) -> None:
    generated = random_test_id()
    assert not is_generated_test_id(generated)  # no AIRFLOW_CONN_<ID>: a connection someone named so
    monkeypatch.setenv(f"AIRFLOW_CONN_{generated.upper()}", "analytics://")
    assert is_generated_test_id(generated)
    assert connection_name(generated) == "this connection"
    for named in ("analytics_default", generated.lower(), f"{generated}x"):
        monkeypatch.setenv(f"AIRFLOW_CONN_{named.upper()}", "analytics://")
        assert connection_name(named) == f"connection {named!r}"


def run_as_the_rest_api_does(
    monkeypatch: pytest.MonkeyPatch, hooks: list[AnalyticsHook], **fields: Any
) -> tuple[bool, str]:
    """Test a connection as Airflow's ``POST /api/v2/connections/test`` route does (what the UI's Test button
    calls): a copy under a random id, exported as ``AIRFLOW_CONN_<ID>``, then the hook made for that id. (The
    route goes through ``Connection.get_hook()``, whose providers lookup warns of its own deprecation on 3.3.)"""
    transient = random_test_id()
    monkeypatch.setenv(f"AIRFLOW_CONN_{transient.upper()}", conn(conn_id=transient, **fields).get_uri())
    ok, message = new_hook(hooks, transient).test_connection()
    assert transient not in message
    return ok, message


def test_the_rest_api_test_names_no_random_id(
    monkeypatch: pytest.MonkeyPatch, hooks: list[AnalyticsHook], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    ok, message = run_as_the_rest_api_does(monkeypatch, hooks, host="ftp://files.example.com", password=TOKEN)
    assert not ok
    assert message.startswith("This connection: host (the base URL) must be an http(s) URL")
    # Refused after the extras were looked over (no request is sent): the warning names no random id either.
    ok, message = run_as_the_rest_api_does(
        monkeypatch, hooks, host=HOST, password=TOKEN, extra={"time_out": 5, "timeout": "soon"}
    )
    assert (ok, message.split(": extra")[0]) == (False, "This connection")  # named once, not "misconfigured: this"
    (warning,) = warnings_logged(caplog)
    assert warning.startswith("Extra 'time_out' of this connection is not a setting of this provider")


def test_the_rest_api_test_of_a_working_connection_passes(
    sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch, hooks: list[AnalyticsHook]
) -> None:
    ok, message = run_as_the_rest_api_does(
        monkeypatch, hooks, host=sandbox.base_url, password=f"Bearer {sandbox.token}"
    )
    assert ok, message
    assert message.startswith(f"Connected to the Analytics Platform at {sandbox.base_url}")


def test_notes_follow_the_outcome_of_a_connection_test() -> None:
    conn_id = fresh_id()
    typo = conn(conn_id=conn_id, host=HOST, password=f"Bearer {TOKEN}", extra={"time_out": 5})
    assert with_notes("Connected to the Analytics Platform at https://api.example.com", typo) == (
        "Connected to the Analytics Platform at https://api.example.com. "
        f"The API token of connection {conn_id!r} began with 'Bearer ': the prefix was removed (the hook adds it). "
        f"Extra 'time_out' of connection {conn_id!r} is not a setting of this provider and is ignored: "
        "did you mean 'timeout'?"
    )
    plain = conn(conn_id=conn_id, host=HOST, password=TOKEN)
    assert with_notes("Connected to the Analytics Platform at https://api.example.com", plain).endswith(".com")


def test_a_page_that_is_not_the_api_is_named_as_such() -> None:
    named = conn(conn_id="analytics_default", host=HOST, password=TOKEN)
    assert not_the_api(named, "http://127.0.0.1:8080", "text/html; charset=utf-8", "ignored") == (
        "http://127.0.0.1:8080 answered with an HTML page, not the Analytics API: is the host of connection "
        "'analytics_default' the platform's API address?"
    )
    assert not_the_api(named, "http://127.0.0.1:8080", "text/plain", "GET /v1/workflows answered 200 ...").endswith(
        "the platform's API address? (GET /v1/workflows answered 200 ...)"
    )


# test_connection()'s answer: a passing test still names what it ignored; a page that is not the API says so.


def connected(
    monkeypatch: pytest.MonkeyPatch, hooks: list[AnalyticsHook], conn_id: str, **fields: object
) -> tuple[bool, str]:
    set_json_connection(monkeypatch, f"AIRFLOW_CONN_{conn_id.upper()}", **fields)
    return new_hook(hooks, conn_id).test_connection()


def test_a_passing_test_names_the_unknown_extras(
    sandbox: SandboxServer,
    hooks: list[AnalyticsHook],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    conn_id = fresh_id()
    extra = {"workspace": "ws_marketing", "time_out": 5}
    ok, message = connected(monkeypatch, hooks, conn_id, host=sandbox.base_url, password=sandbox.token, extra=extra)
    assert ok, message
    assert message == (
        f"Connected to the Analytics Platform at {sandbox.base_url}. "
        f"Extra 'time_out' of connection {conn_id!r} is not a setting of this provider and is ignored: "
        "did you mean 'timeout'? "
        f"Extra 'workspace' of connection {conn_id!r} is not a setting of this provider and is ignored: "
        "did you mean 'workspace_id'?"
    )
    assert len(warnings_logged(caplog)) == 2  # and in the log, once each


def test_a_failing_test_names_them_too(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = {"workspace": "ws_marketing"}
    ok, message = connected(monkeypatch, hooks, fresh_id(), host=sandbox.base_url, password=BOGUS_TOKEN, extra=extra)
    assert not ok
    assert "(401)" in message
    assert message.endswith("did you mean 'workspace_id'?")


def test_a_passing_test_says_the_bearer_prefix_was_removed(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    conn_id = fresh_id()
    ok, message = connected(monkeypatch, hooks, conn_id, host=sandbox.base_url, password=f"Bearer {sandbox.token}")
    assert ok, message
    assert message == (
        f"Connected to the Analytics Platform at {sandbox.base_url}. "
        f"The API token of connection {conn_id!r} began with 'Bearer ': the prefix was removed (the hook adds it)."
    )
    assert sandbox.token not in message


def test_a_host_that_answers_with_an_html_page_is_not_the_api(
    hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    conn_id = fresh_id()
    with HostileServer([HTML]) as server:
        ok, message = connected(monkeypatch, hooks, conn_id, host=server.url, password=f"Bearer {BOGUS_TOKEN}")
        (probe,) = server.received
    assert not ok
    assert message.startswith(
        f"{server.url} answered with an HTML page, not the Analytics API: is the host of connection {conn_id!r} "
        "the platform's API address? The API token of"
    )
    assert probe.header("Authorization") == f"Bearer {BOGUS_TOKEN}".encode()  # once "Bearer", not twice


def test_json_that_is_not_the_api_s_is_named_with_what_was_wrong(
    hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    conn_id = fresh_id()
    with HostileServer([json_script(b'{"status": "ok"}')]) as server:
        ok, message = connected(monkeypatch, hooks, conn_id, host=server.url, password=BOGUS_TOKEN)
    assert not ok
    assert message.startswith(
        f"{server.url} answered, but not the Analytics API: is the host of connection {conn_id!r}"
    )
    assert "(GET /v1/workflows" in message


def test_under_airflows_random_test_id_the_page_is_this_connection_s(
    hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    transient = random_test_id()
    with HostileServer([HTML]) as server:
        ok, message = connected(monkeypatch, hooks, transient, host=server.url, password=BOGUS_TOKEN)
    assert not ok
    assert message == (
        f"{server.url} answered with an HTML page, not the Analytics API: is the host of this connection the "
        "platform's API address?"
    )


def test_no_form_field_is_a_text_area_on_airflow_3_2_and_later() -> None:
    """Airflow 3.2+ builds the form from these schemas as they are. Its UI (read in 3.3.2's bundle) makes a field
    of several types, without ``enum`` or ``examples``, a 6-row text area, and otherwise picks the widget by the
    first type that is not null: a boolean one is a switch, which cannot hold a CA bundle's path."""
    for name, field in connection_type_info("analytics")["conn-fields"].items():
        schema = field["schema"]
        types = {schema["type"]} if isinstance(schema["type"], str) else set(schema["type"])
        assert len(types - {"null"}) == 1 or "examples" in schema or "enum" in schema, name
    assert connection_type_info("analytics")["conn-fields"]["verify"]["schema"]["type"][0] == "string"


# Airflow 2.11's logging leaves httpx at INFO: a line per poll of every wait (Airflow 3's sets WARNING). A level
# the deployment gave the logger is kept.
@pytest.mark.parametrize(
    ("configured", "level_after", "lines"),
    [(logging.NOTSET, logging.WARNING, False), (logging.INFO, logging.INFO, True)],
)
def test_a_request_logs_no_httpx_info_line_unless_the_deployment_asks(
    sandbox: SandboxServer,
    hooks: list[AnalyticsHook],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    configured: int,
    level_after: int,
    lines: bool,
) -> None:
    httpx_logger = logging.getLogger("httpx")
    monkeypatch.setattr(httpx_logger, "level", configured)
    caplog.set_level(logging.INFO)  # the root logger: what a task log shows
    set_json_connection(monkeypatch, host=sandbox.base_url, password=sandbox.token)
    assert list(new_hook(hooks, "analytics_default").list_workflows())
    assert api_requests(sandbox, "/v1/workflows")
    logged = [record for record in caplog.records if record.name == "httpx" and "HTTP Request" in record.getMessage()]
    assert bool(logged) is lines
    assert httpx_logger.level == level_after
