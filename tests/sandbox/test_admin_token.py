"""The admin token: the one credential of the ``/_sandbox`` control routes, never an API token, and the warning a
sandbox gives when it listens beyond loopback."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys

import httpx
import pytest

from airflow_provider_analytics.sandbox.__main__ import _chosen_admin_token, _parser, main
from airflow_provider_analytics.sandbox.config import FULL_ACCESS_TOKEN, LIMITED_TOKEN
from airflow_provider_analytics.sandbox.domain.tokens import ADMIN_TOKEN_ENV_VAR
from airflow_provider_analytics.sandbox.http.server import is_loopback
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.sandbox.test_basics import assert_contract_error
from tests.support.names import EXECUTE_PATH, admin_headers

# One of each kind: reads, changes, a route with a path parameter, and a path no route has.
CONTROL_REQUESTS = [
    ("GET", "/_sandbox/health"),
    ("GET", "/_sandbox/requests"),
    ("POST", "/_sandbox/reset"),
    ("POST", "/_sandbox/faults"),
    ("POST", "/_sandbox/tokens/rotate"),
    ("POST", "/_sandbox/clock/advance"),
    ("GET", "/_sandbox/data-sources/ds_warehouse/syncs"),
    ("DELETE", "/_sandbox/faults"),
    ("GET", "/_sandbox/no-such-route"),
]
CLI = [sys.executable, "-m", "airflow_provider_analytics.sandbox", "--port", "0", "--speed", "fast"]


def refused(response: httpx.Response, problem: str) -> str:
    """The message of a control route's 401, after checking its shape: the contract's, and where the token is."""
    error = assert_contract_error(response, 401, "unauthenticated")
    assert error["details"] == {}
    assert response.headers["www-authenticate"] == 'Bearer realm="analytics-sandbox-admin"'
    message: str = error["message"]
    assert message.startswith(f"{problem}: ")
    assert "Authorization: Bearer <admin token>" in message
    assert "prints it when it starts" in message
    assert ADMIN_TOKEN_ENV_VAR in message
    assert "SandboxServer.admin_token" in message
    return message


@pytest.mark.parametrize(("method", "path"), CONTROL_REQUESTS)
def test_a_control_route_without_the_admin_token_is_401(
    analytics_sandbox: SandboxServer, method: str, path: str
) -> None:
    response = httpx.request(method, f"{analytics_sandbox.base_url}{path}", json={"grace_seconds": 0})
    refused(response, "missing admin token")


@pytest.mark.parametrize(
    ("authorization", "problem"),
    [
        ("Bearer wrong-admin-token", "invalid admin token"),
        ("Basic YWRtaW46YWRtaW4=", "the admin token goes in one 'Authorization: Bearer' header"),
        (f"Bearer {FULL_ACCESS_TOKEN}", "an API token is not the admin token"),
        (f"Bearer {LIMITED_TOKEN}", "an API token is not the admin token"),
    ],
    ids=["wrong", "basic", "full-access-api-token", "limited-api-token"],
)
@pytest.mark.parametrize(("method", "path"), CONTROL_REQUESTS)
def test_a_control_route_with_another_credential_is_401(
    analytics_sandbox: SandboxServer, method: str, path: str, authorization: str, problem: str
) -> None:
    response = httpx.request(
        method, f"{analytics_sandbox.base_url}{path}", headers={"Authorization": authorization}, json={}
    )
    refused(response, problem)


def test_the_admin_token_with_a_wrong_suffix_or_prefix_is_refused(analytics_sandbox: SandboxServer) -> None:
    token = analytics_sandbox.admin_token
    for wrong in (token[:-1], token + "x", token.upper() if token.upper() != token else token.lower()):
        response = httpx.get(
            f"{analytics_sandbox.base_url}/_sandbox/health", headers={"Authorization": f"Bearer {wrong}"}
        )
        refused(response, "invalid admin token")


def test_a_rotated_api_token_is_not_the_admin_token_either(admin: httpx.Client) -> None:
    rotated = admin.post("/_sandbox/tokens/rotate", json={"grace_seconds": 60}).json()["token"]
    response = admin.get("/_sandbox/health", headers={"Authorization": f"Bearer {rotated}"})
    refused(response, "an API token is not the admin token")


def test_a_refused_request_changes_nothing(analytics_sandbox: SandboxServer, client: httpx.Client) -> None:
    client.post(EXECUTE_PATH, json={})
    base = f"{analytics_sandbox.base_url}/_sandbox"
    api_token = {"Authorization": f"Bearer {analytics_sandbox.token}"}
    for method, path, body in (
        ("POST", "/reset", None),
        ("POST", "/faults", {"kind": "status", "code": 503}),
        ("POST", "/rate-limit", {"per_second": 1}),
        ("POST", "/clock/advance", {"seconds": 3600}),
        ("POST", "/tokens/rotate", {"grace_seconds": 0}),
    ):
        for headers in ({}, api_token):
            assert httpx.request(method, base + path, json=body, headers=headers).status_code == 401
    assert len(analytics_sandbox.state.executions()) == 1
    assert analytics_sandbox.state.faults.pending() == []
    assert analytics_sandbox.rate_limit_stats()["per_second"] is None
    assert client.get("/v1/charts").status_code == 200  # no fault injected, the token not rotated away


def test_the_admin_token_opens_every_control_route(admin: httpx.Client) -> None:
    assert admin.get("/_sandbox/health").json()["ok"] is True
    assert admin.get("/_sandbox/requests").status_code == 200
    assert admin.post("/_sandbox/faults", json={"kind": "status", "code": 503, "path": "/v1/charts"}).status_code == 201
    assert admin.delete("/_sandbox/faults").status_code == 200
    assert admin.post("/_sandbox/clock/advance", json={"seconds": 1}).status_code == 200
    assert admin.get("/_sandbox/data-sources/ds_warehouse/syncs").status_code == 200
    assert admin.post("/_sandbox/reset").status_code == 200
    # An unknown control path is a 404 once the token is right (and a 401 before: the routes are not probed).
    unknown = admin.get("/_sandbox/no-such-route")
    assert (unknown.status_code, unknown.json()["error"]["type"]) == (404, "not_found")


def test_the_v1_api_refuses_the_admin_token_and_is_otherwise_unchanged(
    analytics_sandbox: SandboxServer, client: httpx.Client
) -> None:
    as_admin = client.get("/v1/workflows", headers=admin_headers(analytics_sandbox))
    assert assert_contract_error(as_admin, 401, "unauthenticated")["message"] == "invalid bearer token"
    assert client.get("/v1/workflows").status_code == 200
    without = client.get("/v1/workflows", headers={"Authorization": ""})
    assert assert_contract_error(without, 401, "unauthenticated")["message"] == "missing bearer token"
    marketing = client.get(
        "/v1/workflows", headers={"Authorization": f"Bearer {LIMITED_TOKEN}", "X-Workspace-Id": "ws_marketing"}
    )
    assert marketing.status_code == 403


def test_a_rotation_never_hands_out_the_admin_token(analytics_sandbox: SandboxServer, admin: httpx.Client) -> None:
    answer = admin.post("/_sandbox/tokens/rotate", json={"grace_seconds": 5, "new": analytics_sandbox.admin_token})
    assert answer.status_code == 422
    assert "admin token" in answer.json()["error"]["message"]
    with httpx.Client(base_url=analytics_sandbox.base_url, headers=admin_headers(analytics_sandbox)) as as_admin:
        assert as_admin.get("/v1/workflows").status_code == 401


def test_the_docs_and_the_ui_are_readable_without_a_credential(
    analytics_sandbox: SandboxServer, client: httpx.Client
) -> None:
    client.post(EXECUTE_PATH, json={})
    base = analytics_sandbox.base_url
    document = httpx.get(f"{base}/_sandbox/openapi.json")
    assert document.status_code == 200
    schemes = document.json()["components"]["securitySchemes"]
    assert [scheme["scheme"] for scheme in schemes.values()] == ["bearer"]  # the docs page's "Authorize" button
    assert httpx.get(f"{base}/_sandbox/docs").status_code == 200
    pages = [httpx.get(f"{base}/ui"), httpx.get(f"{base}/ui/data-sources/ds_warehouse")]
    assert [page.status_code for page in pages] == [200, 200]
    for text in (document.text, *(page.text for page in pages)):
        for secret in (analytics_sandbox.admin_token, analytics_sandbox.token, LIMITED_TOKEN):
            assert secret not in text
    # The pages only read: nothing under /ui takes a change.
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        assert httpx.request(method, f"{base}/ui").status_code == 405


def test_a_server_takes_a_fixed_admin_token_or_draws_one() -> None:
    first, second = SandboxServer(), SandboxServer()
    assert first.admin_token != second.admin_token
    assert len(first.admin_token) >= 40
    with SandboxServer(admin_token="fixed-admin-token") as server:
        assert server.admin_token == "fixed-admin-token"
        answer = httpx.get(f"{server.base_url}/_sandbox/health", headers={"Authorization": "Bearer fixed-admin-token"})
        assert answer.status_code == 200


@pytest.mark.parametrize("token", ["", "has space", "naïve", FULL_ACCESS_TOKEN, LIMITED_TOKEN])
def test_a_server_refuses_an_unusable_admin_token(token: str) -> None:
    with pytest.raises(ValueError, match="admin_token must"):
        SandboxServer(admin_token=token)


def test_the_command_line_takes_the_flag_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    parser = _parser()
    monkeypatch.delenv(ADMIN_TOKEN_ENV_VAR, raising=False)
    assert _chosen_admin_token(parser.parse_args([]), parser) is None  # a random one
    monkeypatch.setenv(ADMIN_TOKEN_ENV_VAR, "")
    assert _chosen_admin_token(parser.parse_args([]), parser) is None  # empty counts as unset
    monkeypatch.setenv(ADMIN_TOKEN_ENV_VAR, "from-env")
    assert _chosen_admin_token(parser.parse_args([]), parser) == "from-env"
    assert _chosen_admin_token(parser.parse_args(["--admin-token", "from-flag"]), parser) == "from-flag"
    monkeypatch.setenv(ADMIN_TOKEN_ENV_VAR, "has space")
    with pytest.raises(SystemExit):
        _chosen_admin_token(parser.parse_args([]), parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--admin-token", "has space"])


def test_the_command_line_refuses_an_api_token_as_admin_token(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--port", "0", "--admin-token", FULL_ACCESS_TOKEN])  # refused before it listens
    assert exited.value.code == 2
    assert "must differ from every API token" in capsys.readouterr().err


def test_the_command_line_prints_the_admin_token_it_was_given() -> None:
    env = {**os.environ, ADMIN_TOKEN_ENV_VAR: "script-admin-token"}
    with subprocess.Popen(CLI, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as process:
        try:
            assert process.stdout is not None
            assert process.stderr is not None
            connection = json.loads(process.stdout.readline())
            process.stdout.readline()
            assert process.stdout.readline().strip() == f"export {ADMIN_TOKEN_ENV_VAR}=script-admin-token"
            banner = process.stderr.readline()
            assert banner.startswith(f"# sandbox at {connection['host']} ")
            assert f"admin token for {connection['host']}/_sandbox: script-admin-token " in banner
            assert f"API token {FULL_ACCESS_TOKEN}" in banner
            answer = httpx.get(
                f"{connection['host']}/_sandbox/health", headers={"Authorization": "Bearer script-admin-token"}
            )
            assert answer.status_code == 200
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=15) == 0


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("0.0.0.0", False),
        ("::", False),
        ("", False),
        ("192.168.1.20", False),
        ("sandbox.example.com", False),
    ],
)
def test_what_counts_as_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_server_beyond_loopback_logs_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="airflow_provider_analytics.sandbox")
    with SandboxServer(host="127.0.0.1"):
        pass
    assert not [record for record in caplog.records if "beyond loopback" in record.getMessage()]
    with SandboxServer(host="0.0.0.0") as server:
        port = server.port
        assert httpx.get(f"{server.base_url}/v1/charts", headers={"Authorization": f"Bearer {server.token}"}).is_success
    [warning] = [record for record in caplog.records if "beyond loopback" in record.getMessage()]
    assert warning.levelno == logging.WARNING
    message = warning.getMessage()
    assert f"0.0.0.0 port {port}" in message
    assert "anyone who can reach that port can use its API tokens" in message
    assert "control routes need the admin token" in message


def test_the_command_line_beyond_loopback_prints_the_warning() -> None:
    command = [*CLI, "--host", "0.0.0.0"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            assert process.stderr is not None
            connection = json.loads(process.stdout.readline())
            port = connection["host"].rpartition(":")[2]
            warning, banner = process.stderr.readline(), process.stderr.readline()
            assert warning.startswith(f"# WARNING: the sandbox listens on 0.0.0.0 port {port}, beyond loopback: ")
            assert "anyone who can reach that port can use its API tokens" in warning
            assert "the /_sandbox control routes need the admin token" in warning
            assert banner.startswith("# sandbox at ")
        finally:
            process.send_signal(signal.SIGTERM)  # by its pid
            assert process.wait(timeout=15) == 0
