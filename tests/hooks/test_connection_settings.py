"""Every connection field is checked when the connection is read, with a message naming the field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from airflow.sdk import Connection

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.hooks.connection import client_config_from_connection
from airflow_provider_analytics.wire.core import DEFAULT_MAX_DOWNLOAD_BYTES, DEFAULT_MAX_RESPONSE_BYTES
from airflow_provider_analytics.wire.errors import AnalyticsInputError

TOKEN = "tok-Zq81-never-print-me-7Hx"
SECRET = "pw-hunter2-secret"


def _conn(host: str = "https://api.example.com", port: Any = None, **extra: Any) -> Connection:
    return Connection(
        conn_id="analytics_test", conn_type="analytics", host=host, port=port, password=TOKEN, extra=json.dumps(extra)
    )


BAD = [
    pytest.param({"timeout": "inf"}, "extra 'timeout'", id="timeout-inf"),
    pytest.param({"timeout": "nan"}, "extra 'timeout'", id="timeout-nan"),
    pytest.param({"timeout": 1e400}, "extra 'timeout'", id="timeout-overflow"),
    pytest.param({"timeout": 0}, "extra 'timeout'", id="timeout-zero"),
    pytest.param({"timeout": -1}, "extra 'timeout'", id="timeout-negative"),
    pytest.param({"timeout": 7200}, "extra 'timeout'", id="timeout-over-an-hour"),
    pytest.param({"max_retries": 1e12}, "extra 'max_retries'", id="retries-huge"),
    pytest.param({"max_retries": "3.5"}, "extra 'max_retries'", id="retries-fraction"),
    pytest.param({"max_retries": True}, "extra 'max_retries'", id="retries-bool"),
    pytest.param({"max_response_bytes": 10}, "extra 'max_response_bytes'", id="response-cap-tiny"),
    pytest.param({"max_download_bytes": "lots"}, "extra 'max_download_bytes'", id="download-cap-text"),
    pytest.param({"verify": "/no/such/ca.pem"}, "'verify'", id="verify-missing-bundle"),
]


@pytest.mark.parametrize(("extra", "field"), BAD)
def test_bad_extras_are_refused_naming_the_field(extra: dict[str, Any], field: str) -> None:
    with pytest.raises(AnalyticsInputError, match=field):
        client_config_from_connection(_conn(**extra))


@pytest.mark.parametrize(
    ("host", "port", "field"),
    [
        ("https://api.example.com:abc", None, "host"),
        ("https://api.example.com:99999", None, "host"),
        ("https://api.example.com:0", None, "host"),
        ("https://api.example.com", 99999, "port"),
        ("https://api.example.com", 0, "port"),
        ("https://api.exa\r\nmple.com", None, "host"),
        ("https://api.example.com\nX-Injected: 1", None, "host"),
        ("https://api example.com", None, "host"),
        ("ftp://files.example.com", None, "host"),
        ("https://", None, "host"),
    ],
)
def test_bad_hosts_and_ports_are_refused_naming_the_field(host: str, port: Any, field: str) -> None:
    with pytest.raises(AnalyticsInputError, match=field):
        client_config_from_connection(_conn(host, port))


@pytest.mark.parametrize("host", [f"https://alice:{SECRET}@api.example.com", f"ftp://alice:{SECRET}@h"])
def test_credentials_in_the_host_are_refused_and_never_echoed(host: str) -> None:
    with pytest.raises(AnalyticsInputError) as caught:
        client_config_from_connection(_conn(host))
    text = f"{caught.value} {caught.value!r}"
    assert SECRET not in text
    assert "alice" not in text
    assert "credentials" in text


def test_good_values_in_json_and_uri_form() -> None:
    config = client_config_from_connection(
        _conn("http://[::1]:8080/prefix", timeout="2.5", max_retries="3", max_response_bytes=4096,
              max_download_bytes="1048576")
    )  # fmt: skip
    assert (config.base_url, config.timeout, config.retry.max_retries) == ("http://[::1]:8080/prefix", 2.5, 3)
    assert (config.max_response_bytes, config.max_download_bytes) == (4096, 1048576)
    defaults = client_config_from_connection(_conn())
    assert (defaults.max_response_bytes, defaults.max_download_bytes) == (
        DEFAULT_MAX_RESPONSE_BYTES,
        DEFAULT_MAX_DOWNLOAD_BYTES,
    )


@pytest.mark.parametrize(
    ("host", "extra"),
    [
        ("https://api.example.com:abc", {}),
        ("https://api.exa\r\nmple.com", {}),
        (f"https://user:{SECRET}@api.example.com", {}),
        ("https://api.example.com", {"timeout": "inf"}),
        ("https://api.example.com", {"max_retries": 1e12}),
    ],
)
def test_test_connection_answers_instead_of_raising(monkeypatch: pytest.MonkeyPatch, host: str, extra: dict) -> None:
    connection = {"conn_type": "analytics", "host": host, "password": TOKEN, "extra": extra}
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", json.dumps(connection))
    hook = AnalyticsHook()
    try:
        ok, message = hook.test_connection()
    finally:
        hook.close()
    assert not ok
    assert "misconfigured" in message
    assert TOKEN not in message
    assert SECRET not in message
