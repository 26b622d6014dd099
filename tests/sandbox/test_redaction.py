"""The request log keeps no credentials: tokens, credential headers and data-source secrets are redacted."""

from __future__ import annotations

import json

import httpx
import pytest

from airflow_provider_analytics.sandbox.domain.redaction import redact_authorization, redact_body, redact_headers
from airflow_provider_analytics.sandbox.domain.store import SandboxState
from airflow_provider_analytics.sandbox.server import SandboxServer

PASSWORD = "pw-9f3c1e77"
PRIVATE_KEY = "-----BEGIN KEY-----MIIEv0x7-----END KEY-----"


def connect_with_secrets(client: httpx.Client) -> httpx.Response:
    connection = {
        "account": "acme",
        "user": "svc",
        "password": PASSWORD,
        "options": {"private_key": PRIVATE_KEY, "role": "loader", "nested": [{"token": "tok-77aa"}]},
    }
    return client.post(
        "/v1/data-sources",
        json={"name": "wh", "type": "snowflake", "connection": connection},
        headers={"Cookie": "session=c00k1e", "X-Api-Key": "k3y-4242", "Proxy-Authorization": "Basic cHJveHk="},
    )


def test_snapshot_keeps_no_secret(client: httpx.Client, state: SandboxState, analytics_sandbox: SandboxServer) -> None:
    assert connect_with_secrets(client).status_code == 201
    (logged,) = state.request_log.snapshot()
    assert logged.headers["authorization"] == "Bearer [redacted]"
    assert logged.headers["cookie"] == "[redacted]"
    assert logged.headers["x-api-key"] == "[redacted]"
    assert logged.headers["proxy-authorization"] == "[redacted]"
    assert logged.headers["content-type"] == "application/json"
    connection = logged.json["connection"]
    assert connection["password"] == "[redacted]"
    assert connection["options"] == {"private_key": "[redacted]", "role": "loader", "nested": [{"token": "[redacted]"}]}
    assert (connection["account"], connection["user"]) == ("acme", "svc")
    assert json.loads(logged.body) == logged.json
    everything = repr(state.requests).encode() + logged.body
    for secret in (analytics_sandbox.token, PASSWORD, PRIVATE_KEY, "tok-77aa", "c00k1e", "k3y-4242", "cHJveHk="):
        assert secret.encode() not in everything


def test_admin_request_log_keeps_no_secret(
    client: httpx.Client, admin: httpx.Client, analytics_sandbox: SandboxServer
) -> None:
    assert connect_with_secrets(client).status_code == 201
    client.get("/v1/charts", params={"api_key": "q-s3cret", "limit": "5"})
    text = admin.get("/_sandbox/requests").text
    kept_out = (analytics_sandbox.token, analytics_sandbox.admin_token, PASSWORD, PRIVATE_KEY, "tok-77aa", "c00k1e")
    for secret in (*kept_out, "k3y-4242", "q-s3cret"):
        assert secret not in text
    posted, listed = admin.get("/_sandbox/requests").json()["data"]
    assert posted["headers"]["authorization"] == "Bearer [redacted]"
    assert json.loads(posted["body"])["connection"]["password"] == "[redacted]"
    assert listed["query"] == {"api_key": "[redacted]", "limit": "5"}


def test_what_is_not_secret_is_kept_as_sent(client: httpx.Client, state: SandboxState) -> None:
    raw = b'{"name": "x",   "configuration": {"steps": 3}}'
    client.post("/v1/workflows", content=raw, headers={"Content-Type": "application/json", "X-Trace": "t-1"})
    client.get("/v1/charts", headers={"Authorization": "sandbox-token"})
    posted, unauthenticated = state.requests
    assert posted.body == raw  # not re-serialised: nothing to hide
    assert posted.headers["x-trace"] == "t-1"
    assert unauthenticated.headers["authorization"] == "[redacted]"
    assert unauthenticated.status == 401


def test_the_platform_still_sees_the_real_token(analytics_sandbox: SandboxServer, state: SandboxState) -> None:
    url = f"{analytics_sandbox.base_url}/v1/charts"
    assert httpx.get(url, headers={"Authorization": f"Bearer {analytics_sandbox.token}"}).status_code == 200
    assert httpx.get(url, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert [entry.headers["authorization"] for entry in state.requests] == ["Bearer [redacted]"] * 2


@pytest.mark.parametrize(
    ("value", "expected"),
    [("Bearer abc", "Bearer [redacted]"), ("Basic dXNlcg==", "Basic [redacted]"), ("abc", "[redacted]"), ("", "")],
)
def test_redact_authorization(value: str, expected: str) -> None:
    assert redact_authorization(value) == expected


def test_redact_helpers() -> None:
    headers = {"x-auth-token": "a", "x-client-secret": "b", "idempotency-key": "k", "x-workspace-id": "ws"}
    assert redact_headers(headers) == {**headers, "x-auth-token": "[redacted]", "x-client-secret": "[redacted]"}
    assert redact_body(b"password=plain") == (b"password=plain", None)
    assert redact_body(b"") == (b"", None)
    kept, parsed = redact_body(b'[{"passphrase": "x", "n": 1}]')
    assert parsed == [{"passphrase": "[redacted]", "n": 1}]
    assert b'"x"' not in kept
