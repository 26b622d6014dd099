"""The per-token limit per second on the wire: bursts, headers on and off, tokens apart, the admin route, the marker.

Windows are whole epoch seconds of the wall clock, so a burst may straddle two of them. No assertion depends on
how fast the burst goes: answers are grouped by their ``X-RateLimit-Reset`` (the window they were counted in),
and in each window the first ``limit`` requests pass and the rest are refused.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from typing import Any

import httpx
import pytest

from airflow_provider_analytics.sandbox.config import LIMITED_TOKEN, SandboxConfig, Timings
from airflow_provider_analytics.sandbox.pytest_plugin import MARKER, marker_rate_limit
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.sandbox.test_basics import assert_contract_error
from tests.support.names import admin_headers

RATE_HEADERS = ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")


def admin_error(response: httpx.Response, status: int) -> dict[str, Any]:
    """The contract error of an admin route (those answer outside the gateway: no ``X-Request-Id`` header)."""
    assert response.status_code == status
    error: dict[str, Any] = response.json()["error"]
    assert error["type"] == "invalid_request"
    return error


def burst(client: httpx.Client, count: int, token: str | None = None) -> list[httpx.Response]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    return [client.get("/v1/charts", headers=headers) for _ in range(count)]


def statuses_per_window(answers: list[httpx.Response]) -> dict[int, list[int]]:
    """The statuses of a burst, grouped by the window (``X-RateLimit-Reset``) each was counted in."""
    windows: dict[int, list[int]] = defaultdict(list)
    for answer in answers:
        windows[int(answer.headers["x-ratelimit-reset"])].append(answer.status_code)
    return windows


def assert_fixed_windows(answers: list[httpx.Response], limit: int) -> None:
    """In every window the first ``limit`` requests pass and the rest get 429."""
    for statuses in statuses_per_window(answers).values():
        allowed = min(limit, len(statuses))
        assert statuses == [200] * allowed + [429] * (len(statuses) - allowed), statuses


@pytest.mark.analytics_sandbox(rate_limit=20)
def test_a_burst_gets_the_limit_per_second_and_429_for_the_rest(
    client: httpx.Client, analytics_sandbox: SandboxServer
) -> None:
    started = time.time()
    answers = burst(client, 40)
    for _ in range(3):  # 40 split exactly 20 + 20 over two windows has no 429 to look at: once more then
        if any(answer.status_code == 429 for answer in answers):
            break
        answers += burst(client, 40)
    finished = time.time()
    windows = statuses_per_window(answers)
    assert_fixed_windows(answers, 20)
    allowed = [answer for answer in answers if answer.status_code == 200]
    refused = [answer for answer in answers if answer.status_code == 429]
    assert 20 <= len(allowed) <= 20 * len(windows)
    assert refused
    assert all(math.floor(started) < reset <= math.floor(finished) + 1 for reset in windows)
    for answer in refused:
        error = assert_contract_error(answer, 429, "rate_limited")
        assert error["message"] == "rate limit of 20 requests per second exceeded; retry in 1 s"
        assert answer.headers["retry-after"] == "1"
        assert (answer.headers["x-ratelimit-limit"], answer.headers["x-ratelimit-remaining"]) == ("20", "0")
    remaining: dict[str, list[int]] = defaultdict(list)
    for answer in allowed:
        remaining[answer.headers["x-ratelimit-reset"]].append(int(answer.headers["x-ratelimit-remaining"]))
    assert all(left == list(range(19, 19 - len(left), -1)) for left in remaining.values())  # counts down per window
    stats = analytics_sandbox.rate_limit_stats()
    assert stats == {"per_second": 20, "headers": True, "allowed": len(allowed), "refused": len(refused)}


@pytest.mark.analytics_sandbox(rate_limit=20, rate_limit_headers=False)
def test_without_headers_no_answer_carries_them_and_429_keeps_retry_after(client: httpx.Client) -> None:
    started = time.time()
    answers = burst(client, 40)
    seconds_spanned = math.floor(time.time()) - math.floor(started) + 1
    allowed = sum(answer.status_code == 200 for answer in answers)
    assert 20 <= allowed <= 20 * seconds_spanned
    assert {answer.status_code for answer in answers} <= {200, 429}
    assert not [name for answer in answers for name in RATE_HEADERS if name in answer.headers]
    assert all(answer.headers["retry-after"] == "1" for answer in answers if answer.status_code == 429)
    unauthenticated = client.get("/v1/charts", headers={"Authorization": "Bearer nobody"})
    assert unauthenticated.status_code == 401
    assert not [name for name in RATE_HEADERS if name in unauthenticated.headers]


def test_without_headers_the_per_minute_limit_sends_none_either(
    client: httpx.Client, analytics_sandbox: SandboxServer
) -> None:
    assert client.get("/v1/charts").headers["x-ratelimit-limit"] == "6000"
    analytics_sandbox.set_rate_limit(None, headers=False)
    answer = client.get("/v1/charts")
    assert answer.status_code == 200
    assert not [name for name in RATE_HEADERS if name in answer.headers]


def test_the_per_minute_limit_still_applies_and_names_itself() -> None:
    config = SandboxConfig(timings=Timings.fast(), rate_limit_per_minute=3, rate_limit_per_second=1000)
    with SandboxServer(config=config) as server, httpx.Client(base_url=server.base_url) as client:
        answers = burst(client, 4, server.token)
        assert [answer.status_code for answer in answers] == [200, 200, 200, 429]
        assert answers[0].headers["x-ratelimit-limit"] == "1000"  # the headers describe the per-second limit
        message = assert_contract_error(answers[3], 429, "rate_limited")["message"]
        assert message.startswith("rate limit of 3 requests per minute exceeded; retry in ")
        assert server.rate_limit_stats() == {"per_second": 1000, "headers": True, "allowed": 3, "refused": 0}


@pytest.mark.analytics_sandbox(rate_limit=5)
def test_two_tokens_do_not_share_a_limit(client: httpx.Client, analytics_sandbox: SandboxServer) -> None:
    full: list[httpx.Response] = []
    limited: list[httpx.Response] = []
    for _ in range(8):  # interleaved: a shared count would refuse about half of each token's first five
        full += burst(client, 1)
        limited += burst(client, 1, LIMITED_TOKEN)
    assert_fixed_windows(full, 5)
    assert_fixed_windows(limited, 5)


@pytest.mark.analytics_sandbox(rate_limit=0.5)
def test_a_fractional_limit_uses_whole_second_windows(client: httpx.Client) -> None:
    answers = burst(client, 3)
    assert_fixed_windows(answers, 1)
    assert {int(answer.headers["x-ratelimit-reset"]) % 2 for answer in answers} == {0}
    assert {answer.headers["x-ratelimit-limit"] for answer in answers} == {"1"}
    assert all(answer.headers["retry-after"] in ("1", "2") for answer in answers if answer.status_code == 429)


def test_the_admin_route_turns_the_limit_on_and_off(client: httpx.Client, admin: httpx.Client) -> None:
    initial = admin.get("/_sandbox/rate-limit")
    assert initial.json() == {"per_second": None, "headers": True, "allowed": 0, "refused": 0}
    changed = admin.post("/_sandbox/rate-limit", json={"per_second": 3, "headers": True})
    assert changed.status_code == 200
    assert changed.json() == {"per_second": 3, "headers": True, "allowed": 0, "refused": 0}
    answers = burst(client, 6)
    assert_fixed_windows(answers, 3)
    counted = admin.get("/_sandbox/rate-limit").json()
    assert (counted["allowed"], counted["refused"]) == (
        sum(a.status_code == 200 for a in answers),
        sum(a.status_code == 429 for a in answers),
    )
    off = admin.post("/_sandbox/rate-limit", json={"per_second": None})
    assert off.json() == {**counted, "per_second": None}
    assert {answer.status_code for answer in burst(client, 10)} == {200}
    assert admin.get("/_sandbox/rate-limit").json() == off.json()  # nothing counted while off


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ('{"per_second": 0}', {"per_second"}),
        ('{"per_second": -2}', {"per_second"}),
        ('{"per_second": "fast"}', {"per_second"}),
        ('{"per_second": true}', {"per_second"}),
        ('{"per_second": Infinity}', {"per_second"}),
        ('{"per_second": NaN}', {"per_second"}),
        ('{"headers": false}', {"per_second"}),
        ('{"per_second": 5, "headers": "no"}', {"headers"}),
        ('{"per_second": 5, "burst": 10}', {"burst"}),
    ],
)
def test_the_admin_route_refuses_bad_values(admin: httpx.Client, body: str, fields: set[str]) -> None:
    answer = admin.post("/_sandbox/rate-limit", content=body, headers={"Content-Type": "application/json"})
    assert admin_error(answer, 422)["details"]["fields"].keys() == fields
    assert admin.get("/_sandbox/rate-limit").json()["per_second"] is None


def test_the_admin_route_wants_a_json_object(admin: httpx.Client) -> None:
    admin_error(admin.post("/_sandbox/rate-limit", content="[1]"), 422)
    admin_error(admin.post("/_sandbox/rate-limit", content="{"), 400)


@pytest.mark.analytics_sandbox(rate_limit=7, rate_limit_headers=False)
def test_the_marker_sets_the_limit(analytics_sandbox: SandboxServer, request: pytest.FixtureRequest) -> None:
    assert analytics_sandbox.rate_limit_stats() == {"per_second": 7, "headers": False, "allowed": 0, "refused": 0}
    assert any(line.startswith(f"{MARKER}(") for line in request.config.getini("markers"))


@pytest.mark.analytics_sandbox(rate_limit_headers=False)
def test_the_marker_keeps_what_it_does_not_name(analytics_sandbox: SandboxServer) -> None:
    assert analytics_sandbox.rate_limit_stats()["per_second"] == analytics_sandbox.config.rate_limit_per_second


@pytest.mark.parametrize(
    "mark", [pytest.mark.analytics_sandbox(rate_limt=3), pytest.mark.analytics_sandbox(3)], ids=["typo", "positional"]
)
def test_the_marker_refuses_what_it_does_not_know(mark: pytest.MarkDecorator) -> None:
    with pytest.raises(pytest.fail.Exception, match=f"@pytest.mark.{MARKER} takes only rate_limit"):
        marker_rate_limit(mark.mark, SandboxConfig())


def test_reset_restores_the_configuration_and_zeroes_the_counters() -> None:
    config = SandboxConfig(timings=Timings.fast(), rate_limit_per_second=50, rate_limit_headers=False)
    with SandboxServer(config=config) as server, httpx.Client(base_url=server.base_url) as client:
        assert server.rate_limit_stats() == {"per_second": 50, "headers": False, "allowed": 0, "refused": 0}
        assert "x-ratelimit-limit" not in burst(client, 1, server.token)[0].headers
        server.set_rate_limit(1)
        assert burst(client, 1, server.token)[0].headers["x-ratelimit-limit"] == "1"
        assert client.post("/_sandbox/reset", headers=admin_headers(server)).status_code == 200
        assert server.rate_limit_stats() == {"per_second": 50, "headers": False, "allowed": 0, "refused": 0}
        with pytest.raises(ValueError, match="per_second must be a finite number"):
            server.set_rate_limit(0)
