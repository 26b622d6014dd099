"""Seeded chaos: random 429s, 5xx, resets and slow answers, failing work and work durations, all recorded."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import httpx
import pytest

from airflow_provider_analytics.sandbox.config import SandboxConfig
from airflow_provider_analytics.sandbox.faults.chaos import ChaosConfig
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.names import EXECUTE_PATH, admin_headers

# High rates so that a few dozen requests meet every kind; slow answers come after 2 s, a client gives up after
# 1 s (a normal answer takes milliseconds, even on a busy machine).
NOISY = {"rate_limited": 0.2, "server_error": 0.2, "reset": 0.2, "slow": 0.1, "slow_seconds": 2.0}
CLIENT_TIMEOUT = 1.0


@contextmanager
def chaotic(timeout: float = CLIENT_TIMEOUT, **settings: object) -> Iterator[tuple[httpx.Client, SandboxServer]]:
    """A sandbox with these chaos settings, and a raw client that gives up after ``timeout`` seconds."""
    server = SandboxServer(config=SandboxConfig(chaos=ChaosConfig(**settings)))  # type: ignore[arg-type]
    with (
        server,
        httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {server.token}"}, timeout=timeout
        ) as client,
    ):
        yield client, server


def control(client: httpx.Client, server: SandboxServer, name: str) -> Any:
    """``GET /_sandbox/<name>`` with the server's admin token."""
    return client.get(f"/_sandbox/{name}", headers=admin_headers(server)).json()


def outcomes(client: httpx.Client, count: int) -> list[str]:
    """What each of ``count`` list requests got: its status, or the kind of transport failure."""
    seen = []
    for _ in range(count):
        try:
            seen.append(str(client.get("/v1/charts").status_code))
        except httpx.TimeoutException:
            seen.append("timeout")
        except httpx.TransportError:
            seen.append("reset")
    return seen


def test_the_same_seed_gives_the_same_sequence_of_faults() -> None:
    with chaotic(seed=7, **NOISY) as (client, _):
        first = outcomes(client, 40)
    with chaotic(seed=7, **NOISY) as (client, _):
        second = outcomes(client, 40)
    with chaotic(seed=8, **NOISY) as (client, _):
        other = outcomes(client, 40)
    assert first == second
    assert other != first
    assert {"200", "429", "reset", "timeout"} <= set(first)
    assert set(first) - {"200", "429", "reset", "timeout"} <= {"500", "502", "503"}


def test_every_injected_fault_is_recorded_with_its_request() -> None:
    with chaotic(seed=3, **NOISY) as (client, server):
        seen = outcomes(client, 60)
        chaos = control(client, server, "chaos")
        logged = control(client, server, "requests")["data"]
        requests = {r["request_id"]: r for r in logged}
    counts = chaos["counts"]
    assert counts.get("rate_limited", 0) == seen.count("429")
    assert counts.get("server_error", 0) == sum(seen.count(code) for code in ("500", "502", "503"))
    assert counts.get("reset", 0) == seen.count("reset")
    assert counts.get("slow", 0) == seen.count("timeout")
    assert len(chaos["data"]) == sum(counts.values()) == 60 - seen.count("200")
    for fault in chaos["data"]:
        request = requests[fault["request_id"]]
        assert (fault["source"], fault["method"], fault["path"]) == ("chaos", "GET", request["path"])
        expected = {"rate_limited": {429}, "server_error": {500, 502, 503}, "reset": {0}, "slow": {0, 200}}
        assert request["status"] in expected[fault["kind"]], (fault, request)
    assert chaos["config"]["seed"] == 3


def test_chaos_is_off_without_a_seed() -> None:
    with chaotic(**NOISY) as (client, server):
        assert outcomes(client, 30) == ["200"] * 30
        assert control(client, server, "chaos")["counts"] == {}


def test_a_reset_post_was_processed_then_its_answer_dropped() -> None:
    with chaotic(seed=1, reset=1.0) as (client, server):
        with pytest.raises(httpx.TransportError):
            client.post(EXECUTE_PATH, json={}, headers={"Idempotency-Key": "chaos-reset"})
        executions = control(client, server, "executions")["data"]
    assert len(executions) == 1  # the client never heard, but the platform started it


def test_a_reset_download_is_cut_short() -> None:
    with chaotic(seed=1, reset=1.0) as (client, server):
        with pytest.raises(httpx.TransportError):
            client.post("/v1/reports", json={"dashboard_ids": ["db_sales"], "format": "csv"})
        [report] = control(client, server, "reports")["data"]
        server.state.advance(60)
        with pytest.raises(httpx.TransportError), client.stream("GET", f"/v1/reports/{report['id']}/download") as cut:
            cut.read()
        kinds = [fault["kind"] for fault in control(client, server, "chaos")["data"]]
        statuses = [request["status"] for request in control(client, server, "requests")["data"]]
    assert kinds == ["reset", "reset"]
    assert statuses == [0, 200]  # the POST's answer dropped; the download's headers sent, its body cut


def parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def work(seed: int) -> list[tuple[str, float]]:
    """Status and length of 30 executions and 10 reports made under chaos, once all of them finished."""
    settings = {"execution_failure": 0.3, "report_failure": 0.3, "work_seconds": (10.0, 20.0)}
    with chaotic(timeout=30, seed=seed, **settings) as (client, server):
        for _ in range(30):
            client.post(EXECUTE_PATH, json={})
        for _ in range(10):
            client.post("/v1/reports", json={"dashboard_ids": ["db_sales"], "format": "csv"})
        server.state.advance(25)
        executions = control(client, server, "executions")["data"]
        reports = control(client, server, "reports")["data"]
    ended = [(e["status"], (parse(e["finished_at"]) - parse(e["created_at"])).total_seconds()) for e in executions]
    assert all(e["error"]["type"] == "chaos" for e in executions if e["status"] == "failed")
    return ended + [(r["status"], (parse(r["completed_at"]) - parse(r["created_at"])).total_seconds()) for r in reports]


def test_seeded_work_fails_and_lasts_the_same_way() -> None:
    first, second = work(11), work(11)
    assert [status for status, _ in first] == [status for status, _ in second]
    assert {status for status, _ in first} == {"succeeded", "failed", "ready"}
    # Lengths come from the seed too, give or take the time the requests themselves took.
    assert all(abs(a - b) < 2 for (_, a), (_, b) in zip(first, second, strict=True))
    assert all(10 <= length <= 22 for _, length in first)


@pytest.mark.parametrize(
    "settings",
    [{"rate_limited": 1.5}, {"reset": 0.6, "slow": 0.6}, {"work_seconds": (5.0, 1.0)}, {"slow_seconds": -1}],
)
def test_impossible_settings_are_refused(settings: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"must|add up"):
        ChaosConfig(seed=1, **settings)  # type: ignore[arg-type]
