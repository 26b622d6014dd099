"""Lazy cursor pagination, for both transports."""

from __future__ import annotations

import httpx
import pytest

from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.config import ClientConfig
from airflow_provider_analytics.wire.errors import UnexpectedResponseError
from tests.support.fixtures import Api


def test_lists_span_several_pages_in_order_without_repeats(api: Api, sandbox: SandboxServer) -> None:
    workflows = api.items(endpoints.list_workflows(page_size=10))
    assert len(workflows) > 20
    assert len({w["id"] for w in workflows}) == len(workflows)
    pages = [r for r in sandbox.state.requests if r.path == "/v1/workflows"]
    assert len(pages) == -(-len(workflows) // 10)
    assert "cursor" not in pages[0].query
    assert all(r.query["cursor"] for r in pages[1:])


def test_iteration_is_lazy(api: Api, sandbox: SandboxServer) -> None:
    first_three = api.items(endpoints.list_workflows(page_size=5), limit=3)
    assert len(first_three) == 3
    assert len([r for r in sandbox.state.requests if r.path == "/v1/workflows"]) == 1


def test_a_repeated_cursor_is_an_error_not_an_endless_loop() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"data": [{"id": "wf_1"}], "next_cursor": "same"})

    config = ClientConfig(base_url="https://api.example.com", token="t0ken-value")
    transport = httpx.MockTransport(handler)
    with (
        AnalyticsClient(config, transport=transport) as client,
        pytest.raises(UnexpectedResponseError, match="run in a circle"),
    ):
        list(client.paginate(endpoints.list_workflows()))


def test_a_page_without_data_is_unexpected() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"items": []})

    config = ClientConfig(base_url="https://api.example.com", token="t0ken-value")
    transport = httpx.MockTransport(handler)
    with (
        AnalyticsClient(config, transport=transport) as client,
        pytest.raises(UnexpectedResponseError, match="'data' list"),
    ):
        list(client.paginate(endpoints.list_dashboards()))
