"""AnalyticsHook and AnalyticsAsyncHook: connection forms, URL rules, secrets, test_connection and lists."""

from __future__ import annotations

import json
import logging
import socket
import traceback
import warnings
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from airflow.sdk import Connection

from airflow_provider_analytics.hooks.analytics import AnalyticsAsyncHook, AnalyticsHook
from airflow_provider_analytics.hooks.connection import base_url_of, client_config_from_connection
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.errors import (
    AnalyticsConnectionError,
    AnalyticsError,
    AnalyticsInputError,
    ForbiddenError,
    UnauthenticatedError,
)

CONN_ENV = "AIRFLOW_CONN_ANALYTICS_DEFAULT"
LIMITED_TOKEN = "sandbox-token-limited"
# A token no sandbox accepts, distinctive enough to search for in messages.
BOGUS_TOKEN = "tok-Zq81-never-print-me-7Hx"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def hooks() -> Iterator[list[AnalyticsHook]]:
    """Hooks made in a test, closed after it."""
    made: list[AnalyticsHook] = []
    yield made
    for hook in made:
        hook.close()


def new_hook(hooks: list[AnalyticsHook], conn_id: str = "analytics_default") -> AnalyticsHook:
    hook = AnalyticsHook(analytics_conn_id=conn_id)
    hooks.append(hook)
    return hook


def set_json_connection(monkeypatch: pytest.MonkeyPatch, env: str = CONN_ENV, **fields: Any) -> None:
    monkeypatch.setenv(env, json.dumps({"conn_type": "analytics", **fields}))


def conn(**fields: Any) -> Connection:
    """An in-memory connection for the pure parsing helpers (no lookup, no request)."""
    extra = fields.pop("extra", None)
    return Connection(
        conn_id=fields.pop("conn_id", "analytics_test"),
        conn_type="analytics",
        extra=json.dumps(extra) if extra is not None else None,
        **fields,
    )


def closed_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def api_requests(sandbox: SandboxServer, path_suffix: str = "") -> list[Any]:
    return [entry for entry in sandbox.state.requests if entry.path.endswith(path_suffix)]


def whole_text(exc: BaseException) -> str:
    """Everything a log or a UI could show of an exception: message, repr, args and the traceback."""
    return "\n".join([str(exc), repr(exc), repr(exc.args), "".join(traceback.format_exception(exc))])


# --- the connection, in its forms --------------------------------------------------------------------


def test_json_connection_from_env(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    hook = new_hook(hooks)
    assert hook.client.config.base_url == sandbox.base_url
    assert hook.get_conn() is hook.client
    assert hook.ui_url == f"{sandbox.base_url}/ui"
    dashboards = list(hook.list_dashboards())
    assert "db_sales" in [dashboard["id"] for dashboard in dashboards]
    (recorded,) = api_requests(sandbox, "/v1/dashboards")
    assert recorded.headers["authorization"] == "Bearer [redacted]"  # the sandbox's log redacts tokens
    assert recorded.status == 200
    assert recorded.headers["user-agent"].startswith("airflow-provider-analytics/")
    assert "x-workspace-id" not in recorded.headers


def test_uri_connection_with_scheme_in_host(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    port = urlsplit(sandbox.base_url).port
    monkeypatch.setenv(CONN_ENV, f"analytics://http://:{sandbox.token}@127.0.0.1:{port}")
    hook = new_hook(hooks)
    assert hook.client.config.base_url == f"http://127.0.0.1:{port}"
    assert hook.client.config.token == sandbox.token
    assert [workflow["id"] for workflow in hook.list_workflows(page_size=1)][:1] == ["wf_nightly_enrichment"]


def test_uri_connection_extras_arrive_as_strings(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    port = urlsplit(sandbox.base_url).port
    monkeypatch.setenv(
        CONN_ENV,
        f"analytics://http://:{sandbox.token}@127.0.0.1:{port}"
        "?timeout=5&max_retries=2&verify=false&workspace_id=ws_marketing",
    )
    hook = new_hook(hooks)
    config = hook.client.config
    assert config.timeout == 5.0
    assert config.retry.max_retries == 2
    assert config.verify is False
    assert config.workspace_id == "ws_marketing"

    assert [dashboard["id"] for dashboard in hook.list_dashboards()] == ["db_campaigns"]
    (recorded,) = api_requests(sandbox, "/v1/dashboards")
    assert recorded.headers["x-workspace-id"] == "ws_marketing"


def test_uri_connection_with_a_percent_encoded_token(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONN_ENV, "analytics://http://:a%2Fb%2Bc%3D%40d@127.0.0.1:8080/prefix")
    config = new_hook(hooks).client.config
    assert config.token == "a/b+c=@d"
    assert config.base_url == "http://127.0.0.1:8080/prefix"


def test_workspace_extra_is_sent_as_header(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(
        monkeypatch, host=sandbox.base_url, password=sandbox.token, extra={"workspace_id": "ws_marketing"}
    )
    hook = new_hook(hooks)
    assert hook.get_sync_status("ds_ads")["data_source_id"] == "ds_ads"
    generated = hook.generate_report(["db_campaigns"], "csv")
    assert generated["dashboard_ids"] == ["db_campaigns"]
    recorded = api_requests(sandbox)
    assert len(recorded) == 2
    assert all(entry.headers.get("x-workspace-id") == "ws_marketing" for entry in recorded)


# --- base_url_of and the URL rules -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"host": "https://api.example.com"}, "https://api.example.com"),
        ({"host": "api.example.com"}, "https://api.example.com"),
        ({"host": "api.example.com", "port": 8443}, "https://api.example.com:8443"),
        ({"host": "https://api.example.com", "port": 8443}, "https://api.example.com:8443"),
        ({"host": "https://api.example.com:9443", "port": 8443}, "https://api.example.com:9443"),
        ({"host": "http://127.0.0.1", "port": 8080, "schema": "prefix"}, "http://127.0.0.1:8080/prefix"),
        ({"host": "https://api.example.com/base/", "schema": "/tenant/"}, "https://api.example.com/base/tenant"),
        ({"host": "https://api.example.com/base"}, "https://api.example.com/base"),
        ({"host": "  https://api.example.com/  "}, "https://api.example.com"),
        ({"host": "http://[::1]", "port": 8080}, "http://[::1]:8080"),
        ({"host": "http://[::1]:9000", "port": 8080}, "http://[::1]:9000"),
    ],
)
def test_base_url_of(fields: dict[str, Any], expected: str) -> None:
    connection = conn(password="t0ken", **fields)
    assert base_url_of(connection).rstrip("/") == expected
    assert client_config_from_connection(connection).base_url == expected


def test_base_url_drops_a_trailing_v1() -> None:
    config = client_config_from_connection(conn(host="https://api.example.com/v1/", password="t0ken"))
    assert config.base_url == "https://api.example.com"


@pytest.mark.parametrize("host", [None, "", "   "])
def test_missing_host_is_a_clear_error(host: str | None) -> None:
    with pytest.raises(AnalyticsInputError, match="no host"):
        base_url_of(conn(host=host, password="t0ken"))


@pytest.mark.parametrize("host", ["ftp://api.example.com", "https://user:pw@api.example.com", "https://x.com/?a=1"])
def test_malformed_base_url_is_refused(host: str) -> None:
    with pytest.raises(AnalyticsInputError, match="base URL"):
        client_config_from_connection(conn(host=host, password="t0ken"))


@pytest.mark.parametrize(
    "host",
    ["http://api.example.com", "http://10.0.0.5:8080", "http://127.0.0.1.example.com", "http://localhost.evil.io"],
)
def test_plain_http_to_a_remote_host_is_refused(host: str) -> None:
    with pytest.raises(AnalyticsInputError, match="allow_insecure_http") as caught:
        client_config_from_connection(conn(host=host, password="t0ken"))
    assert "http://" in str(caught.value)
    assert urlsplit(host).hostname in str(caught.value)


@pytest.mark.parametrize("allow", [True, "true", "True", "1", "yes"])
def test_plain_http_to_a_remote_host_with_the_extra(allow: Any) -> None:
    config = client_config_from_connection(
        conn(host="http://api.example.com", password="t0ken", extra={"allow_insecure_http": allow})
    )
    assert config.base_url == "http://api.example.com"
    assert config.allow_insecure_http is True


@pytest.mark.parametrize("host", ["http://localhost:8080", "http://127.0.0.1", "http://127.9.9.9", "http://[::1]:80"])
def test_plain_http_to_loopback_is_allowed(host: str) -> None:
    assert client_config_from_connection(conn(host=host, password="t0ken")).base_url == host


def test_insecure_http_refused_by_the_hook_before_any_request(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(monkeypatch, host="http://analytics.internal.example", password=sandbox.token)
    hook = new_hook(hooks)
    with pytest.raises(AnalyticsInputError, match="allow_insecure_http"):
        hook.list_reports()
    ok, message = new_hook(hooks).test_connection()
    assert ok is False
    assert "allow_insecure_http" in message


# --- bad extras --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ({"timeout": "abc"}, "'timeout' must be a number"),
        ({"timeout": "-1"}, "'timeout' must not be negative"),
        ({"timeout": 0}, "timeout must be a positive"),
        ({"max_retries": "many"}, "'max_retries' must be a whole number"),
        ({"max_retries": "2.5"}, "'max_retries' must be a whole number"),
        ({"max_retries": -3}, "'max_retries' must not be negative"),
        ({"allow_insecure_http": "maybe"}, "'allow_insecure_http' must be true or false"),
        ({"workspace_id": "ws marketing/../x"}, "workspace_id"),
    ],
)
def test_bad_extras_are_clear_input_errors(extra: dict[str, Any], match: str) -> None:
    with pytest.raises(AnalyticsInputError, match=match):
        client_config_from_connection(conn(host="https://api.example.com", password="t0ken", extra=extra))


def test_missing_token_is_a_clear_error() -> None:
    with pytest.raises(AnalyticsInputError, match="no API token"):
        client_config_from_connection(conn(host="https://api.example.com"))


@pytest.mark.parametrize("verify", ["false", "0", "no", False])
def test_verify_off(verify: Any) -> None:
    config = client_config_from_connection(conn(host="https://x.example", password="t0ken", extra={"verify": verify}))
    assert config.verify is False


def test_verify_with_a_missing_ca_bundle_is_a_clear_error(tmp_path: Any) -> None:
    missing = str(tmp_path / "no-such-ca.pem")
    connection = conn(host="https://api.example.com", password="t0ken", extra={"verify": missing})
    with pytest.raises(AnalyticsInputError, match="verify"):
        AnalyticsClient(client_config_from_connection(connection)).close()


def test_verify_with_an_unreadable_ca_bundle_is_a_clear_error(tmp_path: Any) -> None:
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")
    connection = conn(host="https://api.example.com", password="t0ken", extra={"verify": str(garbage)})
    with pytest.raises(AnalyticsInputError, match="verify"):
        client_config_from_connection(connection)


def test_verify_with_a_ca_bundle_path() -> None:
    import certifi

    connection = conn(host="https://api.example.com", password="t0ken", extra={"verify": f" {certifi.where()} "})
    config = client_config_from_connection(connection)
    assert config.verify == certifi.where()
    AnalyticsClient(config).close()


def test_ca_bundle_path_does_not_use_deprecated_httpx_api() -> None:
    import certifi

    config = client_config_from_connection(
        conn(host="https://api.example.com", password="t0ken", extra={"verify": certifi.where()})
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        AnalyticsClient(config).close()


def test_verify_with_a_missing_ca_bundle_fails_test_connection(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    set_json_connection(
        monkeypatch,
        host=sandbox.base_url.replace("http://", "https://"),
        password=sandbox.token,
        extra={"verify": str(tmp_path / "no-such-ca.pem")},
    )
    ok, message = new_hook(hooks).test_connection()
    assert ok is False
    assert "verify" in message


# --- the token stays secret --------------------------------------------------------------------------


def test_token_not_in_reprs(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    hook = new_hook(hooks)
    config = hook.client.config
    assert config.token == sandbox.token
    for text in (repr(config), str(config), repr(hook.client), repr(hook.get_conn())):
        assert sandbox.token not in text, text
    assert sandbox.base_url in repr(hook.client)


@pytest.mark.anyio
async def test_token_not_in_async_client_repr(sandbox: SandboxServer) -> None:
    async with AnalyticsAsyncHook() as hook:
        client = await hook.get_client()
        assert sandbox.token not in repr(client)
        assert sandbox.base_url in repr(client)


def test_token_not_in_a_401_error(
    sandbox: SandboxServer,
    hooks: list[AnalyticsHook],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    set_json_connection(monkeypatch, host=sandbox.base_url, password=BOGUS_TOKEN)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(UnauthenticatedError) as caught:
        new_hook(hooks).list_charts()
    assert caught.value.status == 401
    assert BOGUS_TOKEN not in whole_text(caught.value)
    assert BOGUS_TOKEN not in caplog.text
    (recorded,) = api_requests(sandbox, "/v1/charts")
    # It was really sent (and refused); the sandbox's log keeps only the scheme.
    assert (recorded.headers["authorization"], recorded.status) == ("Bearer [redacted]", 401)


def test_token_not_in_a_403_error(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(
        monkeypatch, host=sandbox.base_url, password=LIMITED_TOKEN, extra={"workspace_id": "ws_marketing"}
    )
    with pytest.raises(ForbiddenError) as caught:
        new_hook(hooks).get_report("rp_anything")
    assert caught.value.status == 403
    assert caught.value.request_id
    assert LIMITED_TOKEN not in whole_text(caught.value)


def test_token_not_in_retry_logs_or_transport_errors(
    sandbox: SandboxServer,
    hooks: list[AnalyticsHook],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    port = closed_loopback_port()
    set_json_connection(monkeypatch, host=f"http://127.0.0.1:{port}", password=BOGUS_TOKEN, extra={"max_retries": 1})
    caplog.set_level(logging.DEBUG)
    with pytest.raises(AnalyticsConnectionError) as caught:
        new_hook(hooks).list_charts()
    assert f"127.0.0.1:{port}" in str(caught.value)
    assert BOGUS_TOKEN not in whole_text(caught.value)
    assert "retry 1 of 1" in caplog.text
    assert BOGUS_TOKEN not in caplog.text


def test_token_not_in_test_connection_messages(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(monkeypatch, host=sandbox.base_url, password=BOGUS_TOKEN)
    ok, message = new_hook(hooks).test_connection()
    assert ok is False
    assert BOGUS_TOKEN not in message


# --- test_connection ---------------------------------------------------------------------------------


def test_test_connection_ok(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    ok, message = new_hook(hooks).test_connection()
    assert ok is True, message
    assert sandbox.base_url in message
    (probe,) = api_requests(sandbox, "/v1/workflows")
    assert probe.method == "GET"
    assert probe.query.get("limit") == "1"


def test_test_connection_ok_names_the_workspace(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(
        monkeypatch, host=sandbox.base_url, password=sandbox.token, extra={"workspace_id": "ws_marketing"}
    )
    ok, message = new_hook(hooks).test_connection()
    assert ok is True, message
    assert "ws_marketing" in message


def test_test_connection_bad_token(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(monkeypatch, host=sandbox.base_url, password=BOGUS_TOKEN)
    ok, message = new_hook(hooks).test_connection()
    assert ok is False
    assert "401" in message
    assert "token" in message.lower()


def test_test_connection_forbidden_workspace(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(
        monkeypatch, host=sandbox.base_url, password=LIMITED_TOKEN, extra={"workspace_id": "ws_marketing"}
    )
    ok, message = new_hook(hooks).test_connection()
    assert ok is False
    assert "403" in message
    assert "workspace" in message.lower()


def test_test_connection_limited_token_in_its_own_workspace(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(monkeypatch, host=sandbox.base_url, password=LIMITED_TOKEN)
    ok, message = new_hook(hooks).test_connection()
    assert ok is True, message


def test_test_connection_unreachable(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    port = closed_loopback_port()
    set_json_connection(monkeypatch, host=f"http://127.0.0.1:{port}", password=sandbox.token)
    ok, message = new_hook(hooks).test_connection()
    assert ok is False
    assert "reach" in message.lower()
    assert f"127.0.0.1:{port}" in message


def test_test_connection_tls_failure(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    # https:// to the sandbox's plain-HTTP port: the TLS handshake fails.
    set_json_connection(monkeypatch, host=sandbox.base_url.replace("http://", "https://"), password=sandbox.token)
    ok, message = new_hook(hooks).test_connection()
    assert ok is False
    assert "TLS" in message


def test_test_connection_https_is_the_default_scheme(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(monkeypatch, host=sandbox.base_url.removeprefix("http://"), password=sandbox.token)
    hook = new_hook(hooks)
    assert hook.client.config.base_url.startswith("https://")
    ok, message = hook.test_connection()
    assert ok is False
    assert "TLS" in message


def test_test_connection_wrong_path_prefix(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(monkeypatch, host=f"{sandbox.base_url}/not-the-api", password=sandbox.token)
    ok, message = new_hook(hooks).test_connection()
    assert ok is False
    assert "404" in message
    assert "path prefix" in message


def test_test_connection_timeout(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(monkeypatch, host=sandbox.base_url, password=sandbox.token, extra={"timeout": 0.2})
    sandbox.state.inject(Fault.delay(1.0, path="/v1/workflows$", times=2))
    ok, message = new_hook(hooks).test_connection()
    assert ok is False
    assert "in time" in message


def test_test_connection_server_error(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox.state.inject(Fault.status(500, path="/v1/workflows$", times=5))
    ok, message = new_hook(hooks).test_connection()
    assert ok is False
    assert "500" in message


def test_test_connection_without_a_connection(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    ok, message = new_hook(hooks, "analytics_missing").test_connection()  # an answer, never an exception
    assert not ok
    assert "analytics_missing" in message


# --- the async hook ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_async_hook_reads_execution_report_and_sync(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    sync_hook = new_hook(hooks)
    execution = sync_hook.execute_workflow("wf_nightly_enrichment")
    report = sync_hook.generate_report(["db_sales"], "pdf")
    sandbox.state.start_sync("ds_warehouse")
    sandbox.state.advance(10)

    async with AnalyticsAsyncHook() as hook:
        fetched = await hook.get_execution("wf_nightly_enrichment", execution["id"])
        assert fetched["id"] == execution["id"]
        assert fetched["status"] == "succeeded"
        assert (await hook.get_report(report["id"]))["status"] in ("ready", "generating")
        sync = await hook.get_sync_status("ds_warehouse")
        assert sync["status"] == "synced"
        assert sync["data_source_id"] == "ds_warehouse"
        names = [workflow["name"] async for workflow in await hook.list_workflows(page_size=10)]
        assert len(names) == len(sandbox.state.workflows("ws_default"))
        client = await hook.get_client()
        assert await hook.get_client() is client  # one client for the hook's life
    assert hook._client is None  # closed on exit


@pytest.mark.anyio
async def test_async_hook_cancel(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    execution = new_hook(hooks).execute_workflow("wf_churn_scoring")
    async with AnalyticsAsyncHook() as hook:
        cancelled = await hook.cancel_execution("wf_churn_scoring", execution["id"])
    assert cancelled["id"] == execution["id"]
    sandbox.state.advance(1)
    assert new_hook(hooks).get_execution("wf_churn_scoring", execution["id"])["status"] == "cancelled"


@pytest.mark.anyio
async def test_async_hook_uses_its_own_connection(sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    set_json_connection(
        monkeypatch,
        env="AIRFLOW_CONN_ANALYTICS_MARKETING",
        host=sandbox.base_url,
        password=sandbox.token,
        extra={"workspace_id": "ws_marketing"},
    )
    hook = AnalyticsAsyncHook(analytics_conn_id="analytics_marketing")
    assert sandbox.state.requests == []
    try:
        assert (await hook.get_sync_status("ds_ads"))["data_source_id"] == "ds_ads"
    finally:
        await hook.aclose()
    (recorded,) = sandbox.state.requests
    assert recorded.headers["x-workspace-id"] == "ws_marketing"


@pytest.mark.anyio
async def test_async_hook_errors_are_the_same_tree(sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    set_json_connection(monkeypatch, host=sandbox.base_url, password=BOGUS_TOKEN)
    async with AnalyticsAsyncHook() as hook:
        with pytest.raises(UnauthenticatedError) as caught:
            await hook.get_report("rp_x")
    assert BOGUS_TOKEN not in whole_text(caught.value)
    set_json_connection(monkeypatch, host="http://remote.example", password=sandbox.token)
    async with AnalyticsAsyncHook() as hook:
        with pytest.raises(AnalyticsInputError, match="allow_insecure_http"):
            await hook.get_report("rp_x")


# --- lists and iterators -----------------------------------------------------------------------------


def test_iter_chart_data_yields_rows_and_sets_columns(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    hook = new_hook(hooks)
    rows = hook.iter_chart_data("ch_revenue", page_size=100)
    assert rows.columns is None
    assert sandbox.state.requests == []  # lazy

    iterator = iter(rows)
    first = next(iterator)
    assert len(api_requests(sandbox, "/data")) == 1
    assert rows.columns is not None
    assert [column["name"] for column in rows.columns] == ["day", "revenue"]
    assert all(set(column) >= {"name", "type"} for column in rows.columns)
    assert len(first) == len(rows.columns)

    rest = list(iterator)
    total = sandbox.config.chart_rows
    assert 1 + len(rest) == total
    pages = api_requests(sandbox, "/v1/charts/ch_revenue/data")
    assert len(pages) == -(-total // 100)
    assert all(page.query["limit"] == "100" for page in pages)
    assert all(len(row) == 2 for row in rest)


def test_iter_chart_data_rejects_bad_input_before_any_request(
    sandbox: SandboxServer, hooks: list[AnalyticsHook]
) -> None:
    hook = new_hook(hooks)
    with pytest.raises(AnalyticsInputError):
        list(hook.iter_chart_data("../charts"))
    with pytest.raises(AnalyticsInputError, match="page_size"):
        list(hook.iter_chart_data("ch_revenue", page_size=0))
    assert sandbox.state.requests == []


def test_list_workflows_is_lazy(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    hook = new_hook(hooks)
    expected = [workflow["id"] for workflow in sandbox.state.workflows("ws_default")]
    assert len(expected) > 10

    pager = hook.list_workflows(page_size=10)
    assert sandbox.state.requests == []
    first = next(iter(pager))
    assert first["id"] == expected[0]
    assert len(sandbox.state.requests) == 1

    everything = [workflow["id"] for workflow in hook.list_workflows(page_size=10)]
    assert everything == expected
    pages = sandbox.state.requests[1:]
    assert len(pages) == -(-len(expected) // 10)
    assert [page.query.get("limit") for page in pages] == ["10"] * len(pages)
    assert "cursor" not in pages[0].query
    assert all("cursor" in page.query for page in pages[1:])


def test_list_dashboards_and_small_lists(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    hook = new_hook(hooks)
    assert [d["id"] for d in hook.list_dashboards()] == [d["id"] for d in sandbox.state.dashboards("ws_default")]
    assert {c["id"] for c in hook.list_charts()} == {c["id"] for c in sandbox.state.charts("ws_default")}
    sources = hook.list_data_sources()
    assert {s["id"] for s in sources} == {"ds_warehouse", "ds_events", "ds_crm"}
    assert hook.list_reports() == []


def test_every_post_carries_an_idempotency_key(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    hook = new_hook(hooks)
    chart = hook.create_chart("c", "line", "ds_warehouse", "select 1")
    hook.create_dashboard("d", layout=[{"chart_id": chart["id"], "x": 0, "y": 0, "w": 6, "h": 4}])
    workflow = hook.create_workflow("w", {"steps": []})
    execution = hook.execute_workflow(workflow["id"])
    hook.cancel_execution(workflow["id"], execution["id"])
    hook.connect_data_source("s", "postgres", {"host": "db", "port": 5432, "database": "x", "user": "u"})
    hook.generate_report(["db_sales"])
    hook.generate_report(["db_sales"], idempotency_key="my-key-1")

    posts = [entry for entry in sandbox.state.requests if entry.method == "POST"]
    assert len(posts) == 8
    keys = [entry.headers.get("idempotency-key") for entry in posts]
    assert all(keys), keys
    assert keys[-1] == "my-key-1"
    assert len(set(keys)) == len(keys)


def test_close_and_reopen(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    hook = new_hook(hooks)
    first = hook.client
    hook.list_reports()
    hook.close()
    hook.close()  # twice is fine
    assert hook.client is not first
    assert hook.list_reports() == []


def test_errors_are_analytics_errors(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    hook = new_hook(hooks)
    with pytest.raises(AnalyticsError) as caught:
        hook.get_execution("wf_nightly_enrichment", "ex_missing")
    assert getattr(caught.value, "status", None) == 404
