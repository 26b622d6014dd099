"""A platform (or proxy) that echoes the token URL-encoded or in base64 (alone, or as ``Basic user:token``): no
encoding of it reaches an exception, its request id, a Deprecation/Sunset warning or a trigger event."""

from __future__ import annotations

import base64
import json
import logging
import uuid
from urllib.parse import quote, quote_plus

import pytest

from airflow_provider_analytics.operators.errors import RemoteWaitError
from airflow_provider_analytics.triggers.executions import ExecutionTrigger
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._calls import Call, RequestSpec
from airflow_provider_analytics.wire._redaction import remember_secret, remember_secrets, scrub_body, scrub_text
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.config import ClientConfig
from airflow_provider_analytics.wire.errors import NotFoundError
from airflow_provider_analytics.wire.retry import RetryPolicy
from tests.support.connections import set_json_connection, whole_text
from tests.support.hostile import HostileServer, Script, json_script
from tests.support.names import POLL, WORKFLOW
from tests.support.triggers import only_event, soon

# Every character an encoder treats differently: "/" (kept by quote, not by quote_plus), "+", "=", ":", "&", "?".
TOKEN = "tok/Se+cr=et:Zq81&never?print~7Hx-2561bd7"


def _b64(text: str, alphabet: str = "standard") -> str:
    encode = base64.urlsafe_b64encode if alphabet == "url" else base64.b64encode
    return encode(text.encode()).decode()


def encodings(secret: str) -> dict[str, str]:
    """Each form a platform, a proxy or a client library has been seen to echo a credential in."""
    forms = {
        "quote": quote(secret, safe=""),
        "quote keeping /": quote(secret),
        "quote_plus": quote_plus(secret),
        "base64": _b64(secret),
        "base64 url-safe": _b64(secret, "url"),
    }
    forms["quote lower-case hex"] = "".join(
        part.lower() if part.startswith("%") else part for part in _escape_parts(forms["quote"])
    )
    # Inside a longer base64 text the token sits at each byte offset modulo 3: a Basic header's user:token.
    for user in ("u", "us", "usr"):
        forms[f"Basic {user}:token"] = "Basic " + _b64(f"{user}:{secret}")
        forms[f"url-safe {user}:token:tail"] = _b64(f"{user}:{secret}:tail", "url")
    return forms


def _escape_parts(text: str) -> list[str]:
    parts, index = [], 0
    while index < len(text):
        step = 3 if text[index] == "%" else 1
        parts.append(text[index : index + step])
        index += step
    return parts


def assert_no_form(secret: str, *texts: object) -> None:
    """No encoding of ``secret`` (nor its base64 middle at any offset) is in any of ``texts``."""
    raw = secret.encode()
    middles = [base64.b64encode(b"\0" * n + raw).decode()[n + 1 : -4] for n in range(3)]
    for text in map(str, texts):
        for name, form in [("raw", secret), *encodings(secret).items()]:
            assert form.removeprefix("Basic ") not in text, f"{name} form in {text!r}"
        for middle in middles:
            for spelling in (middle, middle.translate(str.maketrans("+/", "-_"))):
                assert spelling not in text, f"a base64 form in {text!r}"


def echo_body(secret: str) -> bytes:
    forms = encodings(secret)
    message = "; ".join(f"{name}={form}" for name, form in forms.items())
    details = {"authorization": forms["Basic usr:token"], "query": f"/v1/x?token={forms['quote_plus']}"}
    return json.dumps({"error": {"type": "not_found", "message": message, "details": details}}).encode()


def not_found(secret: str) -> Script:
    script = json_script(echo_body(secret), b"HTTP/1.1 404 Not Found")
    # The request id repeats the token too: it is quoted in the message and kept on the error.
    request_id = b"X-Request-Id: req-" + quote(secret, safe="").encode()
    return Script(script.status, (*script.headers, request_id), script.body)


def client_for(server: HostileServer) -> AnalyticsClient:
    policy = RetryPolicy(max_retries=0, backoff_initial=0.01, backoff_max=0.05)
    return AnalyticsClient(ClientConfig(base_url=server.url, token=TOKEN, retry=policy, timeout=5.0))


@pytest.mark.parametrize("name", list(encodings(TOKEN)))
def test_every_encoding_of_a_remembered_secret_is_masked(name: str) -> None:
    remember_secret(TOKEN)
    form = encodings(TOKEN)[name]
    text = f'{{"message": "refused [{form}] for you"}}'
    expected = "Basic ***" if form.startswith("Basic ") else "***"
    assert scrub_text(text) == f'{{"message": "refused [{expected}] for you"}}'
    assert scrub_body(text.encode()) == scrub_text(text).encode()
    slashes_escaped = text.replace("/", "\\/")  # as a JSON encoder may write them
    assert_no_form(TOKEN, scrub_text(slashes_escaped), scrub_body(slashes_escaped.encode()))


def test_a_secret_that_reads_as_json_syntax_leaves_bodies_intact() -> None:
    # Values under secret-looking keys are remembered, and some are numbers or literals: masking those in a raw
    # body would turn "ttl": 86400 into "ttl": ***, which no JSON parser reads.
    remember_secrets({"token_ttl": 86400, "use_token": "false", "secret_ratio": "1.5e+10", "api_key": "kept-4242"})
    body = b'{"ttl": 86400, "ok": false, "ratio": 1.5e+10, "key": "kept-4242"}'
    assert json.loads(scrub_body(body)) == {"ttl": 86400, "ok": False, "ratio": 1.5e10, "key": "***"}


def test_an_error_and_its_request_id_carry_no_encoding_of_the_token() -> None:
    with (
        HostileServer([not_found(TOKEN)]) as server,
        client_for(server) as client,
        pytest.raises(NotFoundError) as caught,
    ):
        client.call(endpoints.get_report("rp_1"))
    error = caught.value
    assert error.request_id == "req-***"
    assert "quote=***" in error.message  # what was hidden stays legible
    assert "Basic usr:token=Basic ***" in error.message
    assert error.details == {"authorization": "Basic ***", "query": "/v1/x?token=***"}
    assert_no_form(TOKEN, whole_text(error), error.request_id, error.details)


def test_a_success_answer_carries_no_encoding_of_the_token() -> None:
    forms = encodings(TOKEN)
    answer = {"id": "rp_1", "status": "ready", "parameters": forms}
    with HostileServer([json_script(json.dumps(answer).encode())]) as server, client_for(server) as client:
        report = client.call(endpoints.get_report("rp_1"))
    assert_no_form(TOKEN, json.dumps(report))
    assert json.loads(json.dumps(report))["parameters"]["base64"] == "***"


def test_a_sunset_warning_carries_no_encoding_of_the_token(caplog: pytest.LogCaptureFixture) -> None:
    # Logged once per process and route: a route of this test's own, so no earlier test has been warned about it.
    route = f"/v1/sunset-probe-{uuid.uuid4().hex}"
    call = Call(RequestSpec("GET", route, route), lambda body: body)
    forms = encodings(TOKEN)
    lifecycle = (
        b"Deprecation: see https://docs/?key=" + forms["quote_plus"].encode(),
        b"Sunset: Wed, 01 Jul 2027 00:00:00 GMT; " + forms["Basic u:token"].encode(),
    )
    page = json_script(b"{}")
    server = HostileServer([Script(page.status, (*page.headers, *lifecycle), page.body)])
    with server, client_for(server) as client, caplog.at_level(logging.WARNING):
        client.call(call)
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert [line.split(":", 1)[0] for line in warnings] == [
        "The Analytics Platform sent Deprecation",
        "The Analytics Platform sent Sunset",
    ]
    assert "key=***" in warnings[0]
    assert "GMT; Basic ***" in warnings[1]
    assert_no_form(TOKEN, caplog.text, *warnings)


def test_a_trigger_event_carries_no_encoding_of_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    with HostileServer([not_found(TOKEN)]) as server:
        set_json_connection(monkeypatch, host=server.url, password=TOKEN, extra={"max_retries": 0})
        trigger = ExecutionTrigger(workflow_id=WORKFLOW, execution_id="ex_gone", poll_interval=POLL, deadline=soon())
        event = only_event(trigger)
    assert event["status"] == "error"
    assert "req-***" in event["message"]
    assert_no_form(TOKEN, json.dumps(event), RemoteWaitError.from_event(event["message"], event.get("api_error")))


def test_a_deeply_nested_value_is_walked_without_recursion() -> None:
    # A value handed to a hook method may nest as deep as json.loads allows; the rule's walk must not recurse.
    secret = f"deep-{uuid.uuid4().hex}"
    value: object = {"password": secret}
    for _ in range(20_000):
        value = [{"level": value}]
    assert remember_secrets(value) == [secret]
    assert scrub_text(f"echoed {secret}") == "echoed ***"
