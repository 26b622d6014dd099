"""The connection extra ``min_download_rate`` (bytes per second, 0 turns the floor off): read in both connection
forms, refused naming the connection and the extra when it is not a whole number of at least 0, and carried by
the hook's client (tests/wire/test_download_rate_floor.py shows what the floor does to a download)."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_analytics.connection._config import client_config_from_connection
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.config import DEFAULT_MIN_DOWNLOAD_RATE
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.support.connections import conn, new_hook, set_json_connection, uri_connection

HOST = "https://api.example.com"


VALUES = [(None, DEFAULT_MIN_DOWNLOAD_RATE), ("", DEFAULT_MIN_DOWNLOAD_RATE), (0, 0), ("0", 0), (65536, 65536),
          ("2048", 2048), (1024.0, 1024)]  # fmt: skip


@pytest.mark.parametrize(("value", "rate"), VALUES)
def test_the_extra_in_json_form(value: Any, rate: int) -> None:
    extra = {} if value is None else {"min_download_rate": value}
    config = client_config_from_connection(conn(host=HOST, password="t0ken", extra=extra))
    assert config.min_download_rate == rate
    assert isinstance(config.min_download_rate, int)


def test_the_extra_in_uri_form() -> None:
    config = client_config_from_connection(uri_connection("analytics://:t0ken@api.example.com?min_download_rate=0"))
    assert config.min_download_rate == 0


@pytest.mark.parametrize("value", [-1, "-5", "fast", 1.5, "1e400", True, "inf"])
def test_a_bad_value_is_refused_naming_the_connection_and_the_extra(value: Any) -> None:
    bad = conn(host=HOST, password="t0ken", extra={"min_download_rate": value}, conn_id="analytics_slow")
    with pytest.raises(AnalyticsInputError, match="extra 'min_download_rate'") as caught:
        client_config_from_connection(bad)
    assert "connection 'analytics_slow'" in str(caught.value)


def test_the_hook_carries_the_floor(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(monkeypatch, host=sandbox.base_url, password=sandbox.token, extra={"min_download_rate": 4096})
    hook = new_hook(hooks)
    assert hook.client.config.min_download_rate == 4096
    assert hook.list_reports() == []  # the connection works as before
