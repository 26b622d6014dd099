"""The connection's forms (JSON, URI, extras as strings), the base URL it yields, and bad extras and TLS settings."""

from __future__ import annotations

import warnings
from typing import Any
from urllib.parse import urlsplit

import pytest

from airflow_provider_analytics.connection._config import base_url_of, client_config_from_connection
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.support.connections import api_requests, conn, new_hook, set_json_connection
from tests.support.names import CONN_ENV


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
    assert str(urlsplit(host).hostname) in str(caught.value)


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
