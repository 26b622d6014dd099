"""Every connection field is checked when the connection is read: an AnalyticsInputError naming the
connection and the field, before any request, that never repeats the token or a URL's credentials; and
``test_connection()`` answers ``(False, "<what to fix>")`` for each of them instead of raising."""

from __future__ import annotations

import json
import shutil
import ssl
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from airflow.providers.common.compat.sdk import Connection

from airflow_provider_analytics.connection._config import client_config_from_connection
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.config import DEFAULT_MAX_DOWNLOAD_BYTES, DEFAULT_MAX_RESPONSE_BYTES
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.support.connections import BOGUS_TOKEN, uri_connection

USER, SECRET = "alice-the-user", "pw-hunter2-secret"
CONN_ID = "analytics_test"
HOST = "https://api.example.com"


@dataclass
class StandIn:
    """What the parser reads of a connection, with values an Airflow form would not let through."""

    host: str | None = HOST
    port: Any = None
    schema: str | None = None
    password: str | None = BOGUS_TOKEN
    conn_id: str | None = CONN_ID
    extra_dejson: Any = field(default_factory=dict)


def json_conn(host: str = HOST, port: Any = None, **extra: Any) -> Connection:
    return Connection(
        conn_id=CONN_ID, conn_type="analytics", host=host, port=port, password=BOGUS_TOKEN, extra=json.dumps(extra)
    )


def uri_conn(query: str, host: str = HOST) -> Any:
    """The URI form: ``analytics://:token@<host, percent-encoded>?query`` (every extra is a string)."""
    return uri_connection(f"analytics://:{BOGUS_TOKEN}@{quote(host, safe='')}?{query}", CONN_ID)


def refusal(conn: Any, field_name: str) -> str:
    """The error reading ``conn``, checked for type, connection, field and secrets; its whole text."""
    with pytest.raises(AnalyticsInputError) as caught:
        client_config_from_connection(conn)
    text = "".join(traceback.format_exception(caught.value)) + repr(caught.value)
    assert f"connection {CONN_ID!r}" in str(caught.value)
    assert field_name in str(caught.value)
    for secret in (BOGUS_TOKEN, USER, SECRET):
        assert secret not in text
    return str(caught.value)


# --- numeric extras ----------------------------------------------------------------------------------

BAD_EXTRAS = [
    pytest.param({"timeout": "inf"}, id="timeout-inf"),
    pytest.param({"timeout": "nan"}, id="timeout-nan"),
    pytest.param({"timeout": 1e400}, id="timeout-1e400"),
    pytest.param({"timeout": 0}, id="timeout-zero"),
    pytest.param({"timeout": -1}, id="timeout-negative"),
    pytest.param({"timeout": 3601}, id="timeout-over-MAX_TIMEOUT"),
    pytest.param({"timeout": True}, id="timeout-bool"),
    pytest.param({"max_retries": 1e12}, id="retries-1e12"),
    pytest.param({"max_retries": "1e12"}, id="retries-1e12-text"),
    pytest.param({"max_retries": 21}, id="retries-over-limit"),
    pytest.param({"max_retries": 3.5}, id="retries-fraction"),
    pytest.param({"max_retries": "3.5"}, id="retries-fraction-text"),
    pytest.param({"max_retries": True}, id="retries-bool"),
    pytest.param({"max_retries": "inf"}, id="retries-inf"),
    pytest.param({"max_response_bytes": 10}, id="response-cap-tiny"),
    pytest.param({"max_response_bytes": 4096.5}, id="response-cap-fraction"),
    pytest.param({"max_download_bytes": "lots"}, id="download-cap-text"),
    pytest.param({"max_download_bytes": 1023}, id="download-cap-under-1024"),
]


@pytest.mark.parametrize("extra", BAD_EXTRAS)
def test_a_bad_extra_is_refused_naming_it(extra: dict[str, Any]) -> None:
    (key,) = extra
    refusal(json_conn(**extra), f"extra {key!r}")


@pytest.mark.parametrize(
    ("query", "key"),
    [("timeout=inf", "timeout"), ("timeout=1e400", "timeout"), ("max_retries=1e12", "max_retries")],
)
def test_a_bad_extra_in_uri_form_is_refused_naming_it(query: str, key: str) -> None:
    refusal(uri_conn(query), f"extra {key!r}")


def test_whole_numbers_and_byte_caps_in_json_and_uri_form() -> None:
    for retries in (3, "3", 3.0, " 3 "):
        assert client_config_from_connection(json_conn(max_retries=retries)).retry.max_retries == 3
    config = client_config_from_connection(json_conn(timeout="2.5", max_response_bytes=4096, max_download_bytes="2048"))
    assert (config.timeout, config.max_response_bytes, config.max_download_bytes) == (2.5, 4096, 2048)
    config = client_config_from_connection(uri_conn("max_retries=0&timeout=3600&max_response_bytes=1024"))
    assert (config.retry.max_retries, config.timeout, config.max_response_bytes) == (0, 3600.0, 1024)
    defaults = client_config_from_connection(json_conn())
    assert (defaults.max_response_bytes, defaults.max_download_bytes) == (
        DEFAULT_MAX_RESPONSE_BYTES,
        DEFAULT_MAX_DOWNLOAD_BYTES,
    )


# --- host, port, schema ------------------------------------------------------------------------------

BAD_HOSTS = [
    pytest.param(f"{HOST}:abc", id="port-not-a-number"),
    pytest.param(f"{HOST}:99999", id="port-over-65535"),
    pytest.param(f"{HOST}:0", id="port-zero"),
    pytest.param("https://api.exa\r\nmple.com", id="crlf"),
    pytest.param(f"{HOST}\nX-Injected: 1", id="header-injection"),
    pytest.param("https://api example.com", id="space"),
    pytest.param("https://api.exa\tmple.com", id="tab"),
    pytest.param("https://api.exa\x00mple.com", id="nul"),
    pytest.param("https://api.exa\u200bmple.com", id="zero-width-space"),
    pytest.param("ftp://files.example.com", id="ftp"),
    pytest.param("https://", id="no-host-name"),
    pytest.param("https://[zz]", id="bad-ipv6"),
]


@pytest.mark.parametrize("host", BAD_HOSTS)
def test_a_bad_host_is_refused_naming_it(host: str) -> None:
    refusal(json_conn(host), "host")


@pytest.mark.parametrize("port", [0, 99999, -1, 65536, "abc", True, 8.5])
def test_a_bad_port_is_refused_naming_it(port: Any) -> None:
    refusal(StandIn(port=port), "port")


def test_a_bad_path_prefix_is_refused_naming_it() -> None:
    refusal(StandIn(schema="tenant/a b"), "schema")


@pytest.mark.parametrize(
    "host",
    [
        f"https://{USER}:{SECRET}@api.example.com",
        f"ftp://{USER}:{SECRET}@h",
        f"{USER}:{SECRET}@api.example.com:abc",
        f"https://{USER}:{SECRET}/x@api.example.com",
    ],
)
def test_credentials_in_the_host_are_refused_and_never_echoed(host: str) -> None:
    assert "credentials" in refusal(json_conn(host), "host")


def test_credentials_in_the_ui_url_are_refused_and_never_echoed() -> None:
    refusal(json_conn(ui_url=f"https://{USER}:{SECRET}@ui.example.com"), "extra 'ui_url'")


def test_extras_that_are_not_an_object_are_refused() -> None:
    refusal(StandIn(extra_dejson=["timeout", 5]), "extra")


@pytest.mark.parametrize(
    ("conn", "base_url"),
    [
        (json_conn("http://[::1]:8080/prefix"), "http://[::1]:8080/prefix"),
        (StandIn(host="http://[::1]", port="8080", schema="tenant"), "http://[::1]:8080/tenant"),
        (uri_conn("timeout=5", host="https://api.example.com:8443/base"), "https://api.example.com:8443/base"),
        (
            uri_connection(f"analytics://https://:{BOGUS_TOKEN}@api.example.com:8443/tenant", CONN_ID),
            "https://api.example.com:8443/tenant",
        ),
    ],
)
def test_ipv6_uri_forms_and_prefixes_still_work(conn: Any, base_url: str) -> None:
    assert client_config_from_connection(conn).base_url == base_url


# --- verify: the CA bundle is loaded once per process, not once per read --------------------------------


def test_a_ca_bundle_is_kept_as_a_path_and_loaded_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import certifi

    bundle = tmp_path / "ca.pem"  # a path of its own, so no earlier test has it in the shared cache
    shutil.copy(certifi.where(), bundle)
    built: list[Any] = []
    real = ssl.create_default_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        built.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counting)
    for _ in range(3):
        config = client_config_from_connection(json_conn(verify=f" {bundle} "))
        assert config.verify == str(bundle)
        AnalyticsClient(config).close()
    assert built == [{"cafile": str(bundle)}]


def test_a_ca_bundle_that_cannot_be_loaded_is_named(tmp_path: Path) -> None:
    refusal(json_conn(verify=str(tmp_path / "no-such-ca.pem")), "'verify'")


# --- test_connection() answers instead of raising ------------------------------------------------------

# (the connection as JSON, a word the answer must hold to say what to fix)
ANSWERS = [
    *[pytest.param({"extra": extra}, next(iter(extra)), id=f"extra-{next(iter(extra))}") for extra in (
        {"timeout": "inf"}, {"timeout": 0}, {"max_retries": 1e12}, {"max_retries": 3.5},
        {"max_response_bytes": 10}, {"max_download_bytes": "lots"}, {"verify": "/no/such/ca.pem"},
    )],
    *[pytest.param({"host": host}, "host", id=f"host-{host[:20]}") for host in (
        f"{HOST}:abc", f"{HOST}:99999", f"{HOST}:0", "https://api.exa\r\nmple.com", "https://api example.com",
        "ftp://files.example.com", f"https://{USER}:{SECRET}@api.example.com", f"ftp://{USER}:{SECRET}@h",
    )],
    pytest.param({"port": 99999}, "port", id="port-99999"),
    pytest.param({"port": "abc"}, "port", id="port-abc"),  # Airflow itself cannot read this one
    pytest.param({"password": "tok with spaces\n"}, "token", id="token-with-spaces"),
]  # fmt: skip


@pytest.mark.parametrize(("fields", "word"), ANSWERS)
def test_test_connection_answers_what_to_fix(
    monkeypatch: pytest.MonkeyPatch, fields: dict[str, Any], word: str
) -> None:
    connection = {"conn_type": "analytics", "host": HOST, "password": BOGUS_TOKEN, **fields}
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", json.dumps(connection))
    with AnalyticsHook() as hook:
        ok, message = hook.test_connection()
    assert ok is False
    assert word in message
    assert "analytics_default" in message
    for secret in (BOGUS_TOKEN, USER, SECRET, "tok with spaces"):
        assert secret not in message


def test_test_connection_answers_for_a_uri_it_cannot_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", f"analytics://{USER}:{SECRET}@api.example.com:abc")
    with AnalyticsHook() as hook:
        ok, message = hook.test_connection()
    assert ok is False
    assert "port" in message
    assert USER not in message
    assert SECRET not in message
