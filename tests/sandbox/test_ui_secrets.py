"""The sandbox's ``/ui`` pages need no token, so they show no secret: not a DSN's password, not key material
(a PEM block, an ``sslkey`` or ``sslcert-key`` field, at any depth), not a workflow's ``api_token``."""

from __future__ import annotations

import httpx

from airflow_provider_analytics.sandbox.server import SandboxServer

DSN_PASSWORD = "dsn-pw-4c1e9d"
PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
SSL_KEY = "sslkey-material-77e1"
CERT_KEY = "cert-key-material-0a9b"
API_TOKEN = "wf-api-token-5d2f"


def page(analytics_sandbox: SandboxServer, path: str) -> str:
    """A page as anyone on the network gets it: no token."""
    with httpx.Client(base_url=analytics_sandbox.base_url, timeout=10) as anonymous:
        answer = anonymous.get(path)
    assert answer.status_code == 200, answer.text
    return answer.text


def test_a_data_source_page_shows_no_password_or_key(client: httpx.Client, analytics_sandbox: SandboxServer) -> None:
    connection = {
        "host": "db",
        "database": "sales",
        "user": "svc",
        "dsn": f"postgres://svc:{DSN_PASSWORD}@db:5432/sales",
        "sslkey": SSL_KEY,
        "options": {"sslcert-key": CERT_KEY, "client_cert": PEM, "sslmode": "verify-full"},
    }
    created = client.post("/v1/data-sources", json={"name": "wh", "type": "postgres", "connection": connection})
    assert created.status_code == 201, created.text
    text = page(analytics_sandbox, f"/ui/data-sources/{created.json()['id']}")
    for secret in (DSN_PASSWORD, SSL_KEY, CERT_KEY, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"):
        assert secret not in text
    # What is not secret stays legible: the page is for looking at the object.
    assert "postgres://svc:[redacted]@db:5432/sales" in text
    assert "verify-full" in text


def test_a_workflow_page_shows_no_secret_of_its_configuration(
    client: httpx.Client, analytics_sandbox: SandboxServer
) -> None:
    configuration = {"steps": [{"name": "pull", "auth": {"api_token": API_TOKEN}}], "key": PEM}
    created = client.post("/v1/workflows", json={"name": "secretive", "configuration": configuration})
    assert created.status_code == 201, created.text
    text = page(analytics_sandbox, f"/ui/workflows/{created.json()['id']}")
    assert API_TOKEN not in text
    assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" not in text
    assert "pull" in text
