"""A hostile or broken platform, played by the sandbox's faults: every answer ends in a typed error, in
bounded time and memory, on both transports."""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any

import pytest

from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._pagination import SyncPager
from airflow_provider_analytics.wire.errors import (
    AnalyticsTimeoutError,
    InvalidRequestError,
    NotFoundError,
    RateLimitedError,
    ResponseTooLargeError,
    ServerError,
    UnexpectedResponseError,
)
from airflow_provider_analytics.wire.retry import RetryPolicy
from tests.support.fixtures import Api, ApiFactory
from tests.support.names import JSON_HEADERS

NO_RETRY = RetryPolicy(max_retries=0)


def _bomb(decoded_bytes: int) -> bytes:
    """A gzip body that inflates to ``decoded_bytes`` of a JSON string, built without holding it."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(b'{"data": ["')]
    block = b"x" * (1 << 20)
    for _ in range(decoded_bytes >> 20):
        parts.append(packer.compress(block))
    parts.append(packer.compress(b'"]}') + packer.flush())
    return b"".join(parts)


# --- statuses no request expects -----------------------------------------------------------------


@pytest.mark.parametrize("code", [302, 301, 307])
def test_a_redirect_is_an_error_not_followed(api: Api, sandbox: SandboxServer, code: Any) -> None:
    headers = {
        "Location": "https://elsewhere.example/v1/charts",
        "Content-Type": "text/html",
        "X-Request-Id": "req_3xx",
    }
    sandbox.state.inject(Fault.respond(code, headers=headers, body="<html>moved</html>", path="/v1/charts"))
    with pytest.raises(UnexpectedResponseError, match=rf"answered {code}.*req_3xx") as caught:
        api.call(endpoints.list_charts())
    assert caught.value.request_id == "req_3xx"
    assert len([r for r in sandbox.state.requests if r.path == "/v1/charts"]) == 1


def test_a_204_where_an_object_is_due_is_unexpected(api: Api, sandbox: SandboxServer) -> None:
    sandbox.state.inject(Fault.respond(204, path="/v1/reports/rp_x"))
    with pytest.raises(UnexpectedResponseError, match="expected a JSON object"):
        api.call(endpoints.get_report("rp_x"))


# --- size -------------------------------------------------------------------------------------------


def test_an_oversized_body_stops_at_the_cap(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    api = api_factory(max_response_bytes=1 << 20)
    sandbox.state.inject(
        Fault.stream(
            200, headers=JSON_HEADERS, prefix=b'{"data": ["', chunk=b"x" * 65536, chunk_count=4096, path="/v1/charts"
        )
    )
    with pytest.raises(ResponseTooLargeError, match="over 1048576 bytes"):
        api.call(endpoints.list_charts())


def test_an_oversized_error_body_stops_at_the_cap(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    api = api_factory(max_response_bytes=1 << 20, retry=NO_RETRY)
    sandbox.state.inject(
        Fault.stream(
            500, headers=JSON_HEADERS, prefix=b'{"error": "', chunk=b"x" * 65536, chunk_count=4096, path="/v1/charts"
        )
    )
    # Read no further than the cap, and keep the status's own error (a 500 is a ServerError, retryable).
    with pytest.raises(ServerError, match=r"HTTP 500 with a body over the 1 MiB limit \(not read\)"):
        api.call(endpoints.list_charts())


def test_a_gzip_bomb_stops_at_the_cap(api: Api, sandbox: SandboxServer) -> None:
    bomb = _bomb(256 << 20)
    assert len(bomb) < 1 << 20
    sandbox.state.inject(
        Fault.respond(200, headers={**JSON_HEADERS, "Content-Encoding": "gzip"}, body=bomb, path="/v1/charts")
    )
    with pytest.raises(ResponseTooLargeError):
        api.call(endpoints.list_charts())


def test_an_honestly_compressed_answer_is_read(api: Api, sandbox: SandboxServer) -> None:
    plain = api.call(endpoints.list_charts())
    sandbox.state.inject(Fault.gzip(path="/v1/charts"))
    assert api.call(endpoints.list_charts()) == plain
    assert "gzip" in sandbox.state.requests[-1].headers["accept-encoding"]


@pytest.mark.parametrize("coding", ["br", "gzip, gzip", "compress"])
def test_a_coding_the_client_did_not_offer_is_unexpected(api: Api, sandbox: SandboxServer, coding: Any) -> None:
    body = gzip.compress(json.dumps({"data": []}).encode())
    sandbox.state.inject(
        Fault.respond(200, headers={**JSON_HEADERS, "Content-Encoding": coding}, body=body, path="/v1/charts")
    )
    with pytest.raises(UnexpectedResponseError, match="content coding"):
        api.call(endpoints.list_charts())


def test_a_corrupt_gzip_body_is_unexpected(api: Api, sandbox: SandboxServer) -> None:
    body = gzip.compress(b'{"data": []}')[:-12] + b"garbage-----"
    sandbox.state.inject(
        Fault.respond(200, headers={**JSON_HEADERS, "Content-Encoding": "gzip"}, body=body, path="/v1/charts")
    )
    with pytest.raises(UnexpectedResponseError, match="does not decode"):
        api.call(endpoints.list_charts())


# --- time ---------------------------------------------------------------------------------------------


def test_a_trickling_body_ends_at_the_request_deadline(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    api = api_factory(timeout=1.0, retry=RetryPolicy(max_retries=1, backoff_initial=0.01, backoff_max=0.01))
    trickle = Fault.stream(
        200,
        headers=JSON_HEADERS,
        prefix=b'{"data": [',
        chunk=b" ",
        chunk_count=120,
        interval=0.25,
        suffix=b"]}",
        times=2,
    )
    sandbox.state.inject(trickle)
    with pytest.raises(AnalyticsTimeoutError):
        api.call(endpoints.list_charts())
    # Each chunk comes well inside the 1 s read timeout, so only the deadline on each attempt can end it
    # (without, the trickle takes 30 s and the list succeeds); both attempts were made, and ended so.
    assert [entry.path for entry in sandbox.state.requests] == ["/v1/charts"] * 2


# --- typed errors for odd answers -----------------------------------------------------------------


def test_deeply_nested_json_is_a_typed_error(api: Api, sandbox: SandboxServer) -> None:
    sandbox.state.inject(
        Fault.respond(200, headers=JSON_HEADERS, body="[" * 200_000 + "]" * 200_000, path="/v1/charts")
    )
    with pytest.raises(UnexpectedResponseError, match="not JSON"):
        api.call(endpoints.list_charts())


def test_deeply_nested_json_in_an_error_body_keeps_the_status(api: Api, sandbox: SandboxServer) -> None:
    body = '{"error": ' + "[" * 200_000 + "]" * 200_000 + "}"
    sandbox.state.inject(
        Fault.respond(400, headers={**JSON_HEADERS, "X-Request-Id": "req_deep"}, body=body, path="/v1/charts")
    )
    with pytest.raises(InvalidRequestError) as caught:
        api.call(endpoints.list_charts())
    assert caught.value.request_id == "req_deep"


@pytest.mark.parametrize(
    ("error", "message"),
    [("no such thing", "no such thing"), (["a", "b"], "HTTP 404"), (42, "HTTP 404"), ({"type": {"x": 1}}, "HTTP 404")],
)
def test_an_error_of_the_wrong_shape_is_still_typed(api: Api, sandbox: SandboxServer, error: Any, message: Any) -> None:
    body = json.dumps({"error": error})
    sandbox.state.inject(
        Fault.respond(404, headers={**JSON_HEADERS, "X-Request-Id": "req_odd"}, body=body, path="/v1/charts")
    )
    with pytest.raises(NotFoundError, match=message) as caught:
        api.call(endpoints.list_charts())
    assert caught.value.request_id == "req_odd"


def test_platform_text_is_one_bounded_line(api: Api, sandbox: SandboxServer) -> None:
    error = {"type": "internal", "message": "line one\r\nFAKE LOG LINE\x1b[31m" + "y" * 5000}
    sandbox.state.inject(Fault.respond(400, headers=JSON_HEADERS, body=json.dumps({"error": error}), path="/v1/charts"))
    with pytest.raises(InvalidRequestError) as caught:
        api.call(endpoints.list_charts())
    text = str(caught.value)
    assert not {"\n", "\r", "\x1b"} & set(text)
    assert len(text) < 1500


@pytest.mark.parametrize("value", ["²", "-1", "1e9", "soon"])  # over 10 digits: test_long_retry_after.py
def test_an_odd_retry_after_falls_back_to_backoff(api: Api, sandbox: SandboxServer, value: Any) -> None:
    sandbox.state.inject(
        Fault.respond(429, headers={**JSON_HEADERS, "Retry-After": value}, body="{}", path="/v1/charts")
    )
    assert isinstance(api.call(endpoints.list_charts()), list)
    assert len(api.sleeps) == 1
    assert api.sleeps[0] <= 0.05  # the test policy's backoff, not the header


def test_a_retry_after_past_the_cap_is_a_rate_limit_error(api: Api, sandbox: SandboxServer) -> None:
    sandbox.state.inject(
        Fault.respond(429, headers={**JSON_HEADERS, "Retry-After": "3600"}, body="{}", path="/v1/charts")
    )
    with pytest.raises(RateLimitedError):
        api.call(endpoints.list_charts())


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"id": "ex_1", "status": "failed", "error": ["boom"]}, "'error' must be null or an object"),
        ({"id": "ex_1", "status": 3}, "'status' must be a string"),
        ({"status": "running"}, "without an 'id'"),
        ({"data_source_id": "ds_1", "status": "running"}, "without an 'id'"),  # a sync status is not an execution
    ],
)
def test_a_resource_of_the_wrong_shape_is_unexpected(api: Api, sandbox: SandboxServer, body: Any, problem: Any) -> None:
    path = "/v1/workflows/wf_1/executions/ex_1"
    sandbox.state.inject(
        Fault.respond(200, headers={**JSON_HEADERS, "X-Request-Id": "req_shape"}, body=json.dumps(body), path=path)
    )
    with pytest.raises(UnexpectedResponseError, match=problem) as caught:
        api.call(endpoints.get_execution("wf_1", "ex_1"))
    assert caught.value.request_id == "req_shape"


@pytest.mark.parametrize(
    "extra",
    [{"columns": "day,revenue"}, {"columns": [{"type": "int"}]}, {"columns": [["day"]]}, {}],
)
def test_chart_columns_of_the_wrong_shape_are_unexpected(api: Api, sandbox: SandboxServer, extra: Any) -> None:
    sandbox.state.inject(Fault.pages(items=[[1]], extra={"chart_id": "ch_1", **extra}, path="/data$"))
    with pytest.raises(UnexpectedResponseError, match="columns"):
        api.items(endpoints.chart_data("ch_1"))


def test_chart_rows_must_match_the_columns(api: Api, sandbox: SandboxServer) -> None:
    columns = [{"name": "day", "type": "date"}, {"name": "revenue", "type": "number"}]
    sandbox.state.inject(Fault.pages(items=[["2026-11-01"]], extra={"columns": columns}, path="/data$"))
    with pytest.raises(UnexpectedResponseError, match="row must be a list of 2 values"):
        api.items(endpoints.chart_data("ch_1"))


# --- pagination -----------------------------------------------------------------------------------


def test_a_cursor_cycle_is_detected(api: Api, sandbox: SandboxServer) -> None:
    sandbox.state.inject(Fault.pages(cycle=2, items=[{"id": "wf_x"}], times=50, path="/v1/workflows$"))
    with pytest.raises(UnexpectedResponseError, match="run in a circle"):
        api.items(endpoints.list_workflows())
    assert len([r for r in sandbox.state.requests if r.path == "/v1/workflows"]) == 3


def test_a_listing_that_never_ends_is_cut_off(api: Api, sandbox: SandboxServer) -> None:
    if api.mode != "sync":
        pytest.skip("the page bound is shared code; one transport is enough")
    sandbox.state.inject(Fault.pages(items=[{"id": "wf_x"}], times=100, path="/v1/workflows$"))
    paged = endpoints.list_workflows()
    pager = SyncPager(lambda cursor: api.call(paged.page(cursor)), max_pages=5)
    with pytest.raises(UnexpectedResponseError, match="did not end after 5 pages"):
        list(pager)
    assert len([r for r in sandbox.state.requests if r.path == "/v1/workflows"]) == 5


def test_a_server_error_stays_typed_after_the_retries(api: Api, sandbox: SandboxServer) -> None:
    sandbox.state.inject(Fault.respond(503, headers={"Content-Type": "text/html"}, body="<h1>down</h1>", times=10))
    with pytest.raises(ServerError, match="HTTP 503"):
        api.call(endpoints.list_charts())
