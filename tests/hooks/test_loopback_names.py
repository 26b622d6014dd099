"""Plain ``http://`` needs no ``allow_insecure_http`` only for a literal loopback address or exactly
``localhost``: a name that merely looks local (``localhost.localdomain``, ``ip6-localhost``) is whatever the
resolver's configuration makes of it, so the token would travel in clear to wherever that is."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.config import is_loopback
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.support.connections import api_requests, new_hook, set_json_connection

LOOKS_LOCAL = ["localhost.localdomain", "ip6-localhost", "ip6-loopback", "LOCALHOST.LOCALDOMAIN", "localhost."]


@pytest.mark.parametrize("name", LOOKS_LOCAL)
def test_a_name_that_only_looks_local_is_refused_before_any_request(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    port = urlsplit(sandbox.base_url).port
    set_json_connection(monkeypatch, host=f"http://{name}:{port}", password=sandbox.token)
    with pytest.raises(AnalyticsInputError, match="allow_insecure_http") as caught:
        list(new_hook(hooks).list_dashboards())
    assert "connection 'analytics_default'" in str(caught.value)
    assert "localhost, 127.0.0.0/8 or ::1" in str(caught.value)
    assert api_requests(sandbox) == []
    ok, message = new_hook(hooks).test_connection()
    assert (ok, "allow_insecure_http" in message) == (False, True)


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_localhost_and_a_loopback_address_need_no_extra(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    port = urlsplit(sandbox.base_url).port
    set_json_connection(monkeypatch, host=f"http://{host}:{port}", password=sandbox.token)
    assert "db_sales" in [dashboard["id"] for dashboard in new_hook(hooks).list_dashboards()]
    assert [entry.status for entry in api_requests(sandbox, "/v1/dashboards")] == [200]


def test_the_extra_still_allows_a_name_that_looks_local(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = {"allow_insecure_http": True}
    set_json_connection(monkeypatch, host="http://localhost.localdomain:8080", password=sandbox.token, extra=extra)
    assert new_hook(hooks).client.config.base_url == "http://localhost.localdomain:8080"


@pytest.mark.parametrize(
    ("hostname", "loopback"),
    [
        ("localhost", True),
        ("LocalHost", True),
        ("127.0.0.1", True),
        ("127.255.0.9", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost.localdomain", False),
        ("ip6-localhost", False),
        ("localhost.", False),
        ("128.0.0.1", False),
        ("::2", False),
        ("0.0.0.0", False),
    ],
)
def test_what_counts_as_loopback(hostname: str, loopback: bool) -> None:
    assert is_loopback(hostname) is loopback
