"""What a new user's first mistakes say: the error starts with what to change and names the connection.

Each failure is provoked for real on loopback (the sandbox, a port nothing listens on, a listener that never
accepts or never answers); the decision behind each text is made from the exceptions in the chain (an
``ssl.SSLError``'s ``reason``, a ``socket.gaierror``, a ``ConnectionRefusedError``), which the tests check too.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
import traceback
from collections.abc import Iterator

import httpx
import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._error_answers import api_error_from_response
from airflow_provider_analytics.wire._tls import transport_error
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.config import ClientConfig
from airflow_provider_analytics.wire.errors import (
    AnalyticsConnectionError,
    AnalyticsTimeoutError,
    AnalyticsTLSError,
    InvalidRequestError,
    NotFoundError,
)
from airflow_provider_analytics.wire.retry import RetryPolicy
from tests.support.connections import closed_loopback_port, set_json_connection
from tests.support.fixtures import ApiFactory
from tests.support.names import JSON_HEADERS

CONN = "analytics_first_try"
NAMED = f"for connection {CONN!r}"
ONCE = RetryPolicy(max_retries=0)
# OpenSSL's reason for an answer that is not TLS: 1.1 and 3.0 say WRONG_VERSION_NUMBER, 3.2 on RECORD_LAYER_FAILURE.
NOT_TLS = {"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE"}


def tracebacks(error: BaseException) -> int:
    """How many tracebacks a log shows for ``error`` and what it was raised from."""
    return "".join(traceback.format_exception(error)).count("Traceback (most recent call last)")


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A loopback socket that listens (a queue of one) and never accepts; closed after the test."""
    with socket.create_server(("127.0.0.1", 0), backlog=0) as server:
        yield server


@pytest.fixture
def plain_http_port() -> Iterator[int]:
    """A port where a plain HTTP server answers 400 to whatever it is sent, as any does to a TLS hello."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)

    def answer_once() -> None:
        try:
            peer, _ = server.accept()
        except OSError:  # the test ended without connecting
            return
        with peer:
            peer.recv(4096)
            peer.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    thread = threading.Thread(target=answer_once, name="plain-http")
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        with contextlib.suppress(OSError):
            server.shutdown(socket.SHUT_RDWR)  # wakes an accept still waiting (a test that failed before connecting)
        server.close()
        thread.join(10)
        assert not thread.is_alive()


def test_https_to_a_plain_http_server_says_to_write_http(api_factory: ApiFactory, plain_http_port: int) -> None:
    api = api_factory(base_url=f"https://127.0.0.1:{plain_http_port}", connection_id=CONN, retry=ONCE)
    with pytest.raises(AnalyticsTLSError) as caught:
        api.call(endpoints.list_charts())
    root = caught.value.__cause__
    assert isinstance(root, ssl.SSLError)
    assert root.reason in NOT_TLS
    assert str(caught.value).startswith(
        f"https://127.0.0.1:{plain_http_port} speaks plain HTTP, not HTTPS: write http://127.0.0.1:{plain_http_port} "
        f"as the host of connection {CONN!r} (and set the extra allow_insecure_http if it is not on loopback). "
        "GET /v1/charts failed with ConnectError: "
    )
    assert tracebacks(caught.value) == 2, "the TLS error, then ours: not httpx's and httpcore's wrappings too"


def test_a_tls_handshake_with_a_plain_http_server_is_not_retried(
    plain_http_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    # The server answers one connection only: a retry would wait on the second one and time out instead.
    config = ClientConfig(
        base_url=f"https://127.0.0.1:{plain_http_port}", token="t0ken", connection_id=CONN, timeout=3.0
    )
    assert config.retry.max_retries > 0
    with AnalyticsClient(config) as client, pytest.raises(AnalyticsTLSError, match="speaks plain HTTP"):
        client.call(endpoints.list_charts())
    assert not [record for record in caplog.records if "retry 1 of" in record.getMessage()]


def test_a_host_without_a_scheme_on_the_sandbox_names_the_connection(
    sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    address = sandbox.base_url.removeprefix("http://")  # https is assumed, the sandbox speaks plain HTTP
    set_json_connection(monkeypatch, host=address, password=sandbox.token, extra={"max_retries": 0})
    hook = AnalyticsHook()
    try:
        with pytest.raises(AnalyticsTLSError) as caught:
            hook.list_charts()
    finally:
        hook.close()
    assert str(caught.value).startswith(
        f"https://{address} speaks plain HTTP, not HTTPS: write http://{address} as the host of connection "
        "'analytics_default'"
    )


def test_without_a_connection_the_http_url_is_suggested_as_the_base_url(plain_http_port: int) -> None:
    config = ClientConfig(base_url=f"https://127.0.0.1:{plain_http_port}/prefix", token="t0ken", retry=ONCE)
    with AnalyticsClient(config) as client, pytest.raises(AnalyticsTLSError) as caught:
        client.call(endpoints.list_charts())
    assert str(caught.value).startswith(
        f"https://127.0.0.1:{plain_http_port}/prefix speaks plain HTTP, not HTTPS: write "
        f"http://127.0.0.1:{plain_http_port}/prefix as the base URL "
    )


def test_the_suggested_http_url_keeps_the_port_https_used(plain_http_port: int) -> None:
    # Nothing may listen on 443 in a test: the TLS failure is a real one from another port, described for a
    # base URL without a port, where plain HTTP would be reached on 443 and not on http's 80.
    config = ClientConfig(base_url=f"https://127.0.0.1:{plain_http_port}", token="t0ken", retry=ONCE)
    with AnalyticsClient(config) as client, pytest.raises(AnalyticsTLSError) as caught:
        client.call(endpoints.list_charts())
    reply = httpx.ConnectError("wrong version number")
    reply.__cause__ = caught.value.__cause__
    error = transport_error(
        reply, method="GET", path="/v1/charts", base_url="https://api.example.com", timeout=30, connection_id=CONN
    )
    assert str(error).startswith(
        "https://api.example.com speaks plain HTTP, not HTTPS: write http://api.example.com:443 as the host of "
        f"connection {CONN!r} "
    )


def test_a_host_name_that_does_not_resolve(api_factory: ApiFactory) -> None:
    api = api_factory(base_url="https://no-such-host.invalid", connection_id=CONN, retry=ONCE)  # RFC 6761: never
    with pytest.raises(AnalyticsConnectionError) as caught:
        api.call(endpoints.list_charts())
    root = caught.value.__cause__
    assert isinstance(root, socket.gaierror)
    why = (
        "the host name could not be resolved just now (is a DNS server reachable? is `host` right?)"
        if root.errno == socket.EAI_AGAIN  # a machine without a resolver cannot say that the name does not exist
        else "the host name does not resolve (check `host`)"
    )
    assert str(caught.value).startswith(f"Could not reach https://no-such-host.invalid {NAMED}: {why}. ")
    assert "GET /v1/charts failed with ConnectError: " in str(caught.value)
    assert tracebacks(caught.value) == 2


def test_a_port_nothing_listens_on(api_factory: ApiFactory) -> None:
    port = closed_loopback_port()
    api = api_factory(base_url=f"http://127.0.0.1:{port}", connection_id=CONN, retry=ONCE)
    with pytest.raises(AnalyticsConnectionError) as caught:
        api.call(endpoints.list_charts())
    assert isinstance(caught.value.__cause__, ConnectionRefusedError)
    assert str(caught.value).startswith(
        f"Could not reach http://127.0.0.1:{port} {NAMED}: nothing listens on that port (is the platform up? is the "
        "port right?). GET /v1/charts failed with ConnectError: "
    )
    assert (caught.value.method, caught.value.path) == ("GET", "/v1/charts")


def test_without_a_connection_the_base_url_is_what_to_check() -> None:
    port = closed_loopback_port()
    config = ClientConfig(base_url=f"http://127.0.0.1:{port}", token="t0ken", retry=ONCE)
    with AnalyticsClient(config) as client, pytest.raises(AnalyticsConnectionError) as caught:
        client.call(endpoints.list_charts())
    assert str(caught.value).startswith(f"Could not reach http://127.0.0.1:{port}: nothing listens on that port")


def test_a_connect_that_never_completes(api_factory: ApiFactory, listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    with socket.create_connection(("127.0.0.1", port)):  # fills the queue: the next handshake is never answered
        api = api_factory(base_url=f"http://127.0.0.1:{port}", connection_id=CONN, retry=ONCE, timeout=0.3)
        with pytest.raises(AnalyticsTimeoutError) as caught:
            api.call(endpoints.list_charts())
    assert str(caught.value).startswith(
        f"Could not reach http://127.0.0.1:{port} {NAMED}: no connection within 0.3 s (is `host` right? does a "
        "firewall drop the packets?). GET /v1/charts timed out after 0.3 s (ConnectTimeout)"
    )


def test_an_answer_that_never_comes(api_factory: ApiFactory, listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    api = api_factory(base_url=f"http://127.0.0.1:{port}", connection_id=CONN, retry=ONCE, timeout=0.3)
    with pytest.raises(AnalyticsTimeoutError) as caught:
        api.call(endpoints.list_charts())
    assert str(caught.value) == (
        f"http://127.0.0.1:{port} (connection {CONN!r}) did not answer in time: GET /v1/charts timed out after "
        "0.3 s (ReadTimeout)"
    )


def test_a_dropped_connection(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    sandbox.state.inject(Fault.drop(path="^/v1/charts$"))
    api = api_factory(connection_id=CONN, retry=ONCE)
    with pytest.raises(AnalyticsConnectionError) as caught:
        api.call(endpoints.list_charts())
    assert str(caught.value).startswith(
        f"The exchange with {sandbox.base_url} (connection {CONN!r}) broke off before an answer (closed by the "
        "platform or a proxy in between). GET /v1/charts failed with RemoteProtocolError"
    )


def test_a_refused_field_is_said_once(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    api = api_factory(connection_id=CONN)
    with pytest.raises(InvalidRequestError) as caught:
        api.call(endpoints.create_chart("c", "line", "ds_missing", "select 1"))
    error = caught.value
    assert error.details == {"fields": {"data_source_id": "data source ds_missing not found"}}  # kept, whole
    assert error.message == "invalid request: data_source_id data source ds_missing not found"
    assert str(error) == (
        "422 invalid_request on POST /v1/charts: data_source_id data source ds_missing not found "
        f"(request id {error.request_id})"
    )


@pytest.mark.parametrize(
    ("workspace_id", "where"),
    [
        ("ws_default", f"in workspace 'ws_default' (connection {CONN!r})"),
        (None, f"in the token's default workspace (connection {CONN!r} sets no workspace_id)"),
    ],
)
def test_a_missing_resource_names_the_workspace_and_the_connection(
    api_factory: ApiFactory, workspace_id: str | None, where: str
) -> None:
    api = api_factory(connection_id=CONN, workspace_id=workspace_id)
    with pytest.raises(NotFoundError) as caught:
        api.call(endpoints.get_execution("wf_missing", "ex_missing"))
    assert str(caught.value) == (
        f"404 not_found on GET /v1/workflows/wf_missing/executions/ex_missing {where}: workflow wf_missing not "
        f"found (request id {caught.value.request_id})"
    )
    assert caught.value.advice is None  # a missing object, not a connection setting


def test_a_base_url_without_the_api_names_no_workspace(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    api = api_factory(base_url=f"{sandbox.base_url}/not-the-api", connection_id=CONN, workspace_id="ws_default")
    with pytest.raises(NotFoundError) as caught:
        api.call(endpoints.list_charts())
    assert caught.value.scope is None
    assert "workspace 'ws_default'" not in str(caught.value)


@pytest.mark.parametrize(
    ("message", "details", "repeated"),
    [
        ("name must not be empty", {"fields": {"name": "must not be empty"}}, True),
        ("Validation failed", {"errors": [{"field": "name", "message": "Validation failed"}]}, False),
        ("name: must not be empty", {"errors": [{"field": "name", "message": "must not be empty"}]}, True),
        ("name must not be empty", {"fields": {"name": "must not be empty", "type": "must not be empty"}}, False),
        ("a limit of 5 was passed", {"limit": 5}, True),
    ],
)
def test_details_are_shown_unless_the_message_says_them(message: str, details: object, repeated: bool) -> None:
    body = {"error": {"type": "invalid_request", "message": message, "details": details}}
    error = api_error_from_response(
        422, JSON_HEADERS, json.dumps(body).encode(), method="POST", path="/v1/charts", connection_id=CONN
    )
    assert ("; details: " in str(error)) is not repeated
    assert error.details == details
