"""AnalyticsHook's lists and iterators, idempotency keys on POSTs, closing and reopening."""

from __future__ import annotations

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.config import Timings
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import AnalyticsError, AnalyticsInputError
from tests.support.connections import api_requests, new_hook


def test_iter_chart_data_yields_rows_and_sets_columns(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    hook = new_hook(hooks)
    rows = hook.iter_chart_data("ch_revenue", page_size=100)
    assert rows.columns is None
    assert sandbox.state.requests == []  # lazy

    iterator = iter(rows)
    first = next(iterator)
    assert len(api_requests(sandbox, "/data")) == 1
    assert rows.columns is not None
    assert [column["name"] for column in rows.columns] == ["day", "revenue"]
    assert all(set(column) >= {"name", "type"} for column in rows.columns)
    assert len(first) == len(rows.columns)

    rest = list(iterator)
    total = sandbox.config.chart_rows
    assert 1 + len(rest) == total
    pages = api_requests(sandbox, "/v1/charts/ch_revenue/data")
    assert len(pages) == -(-total // 100)
    assert all(page.query["limit"] == "100" for page in pages)
    assert all(len(row) == 2 for row in rest)


def test_iter_chart_data_rejects_bad_input_before_any_request(
    sandbox: SandboxServer, hooks: list[AnalyticsHook]
) -> None:
    hook = new_hook(hooks)
    with pytest.raises(AnalyticsInputError):
        list(hook.iter_chart_data("../charts"))
    with pytest.raises(AnalyticsInputError, match="page_size"):
        list(hook.iter_chart_data("ch_revenue", page_size=0))
    assert sandbox.state.requests == []


def test_list_workflows_is_lazy(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    hook = new_hook(hooks)
    expected = [workflow["id"] for workflow in sandbox.state.workflows("ws_default")]
    assert len(expected) > 10

    pager = hook.list_workflows(page_size=10)
    assert sandbox.state.requests == []
    first = next(iter(pager))
    assert first["id"] == expected[0]
    assert len(sandbox.state.requests) == 1

    everything = [workflow["id"] for workflow in hook.list_workflows(page_size=10)]
    assert everything == expected
    pages = sandbox.state.requests[1:]
    assert len(pages) == -(-len(expected) // 10)
    assert [page.query.get("limit") for page in pages] == ["10"] * len(pages)
    assert "cursor" not in pages[0].query
    assert all("cursor" in page.query for page in pages[1:])


def test_list_dashboards_and_small_lists(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    hook = new_hook(hooks)
    assert [d["id"] for d in hook.list_dashboards()] == [d["id"] for d in sandbox.state.dashboards("ws_default")]
    assert {c["id"] for c in hook.list_charts()} == {c["id"] for c in sandbox.state.charts("ws_default")}
    sources = hook.list_data_sources()
    assert {s["id"] for s in sources} == {"ds_warehouse", "ds_events", "ds_crm"}
    assert hook.list_reports() == []


def test_every_post_carries_an_idempotency_key(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    sandbox.state.set_timings(Timings(execution_running=600))  # still running when cancelled, however busy the cores
    hook = new_hook(hooks)
    chart = hook.create_chart("c", "line", "ds_warehouse", "select 1")
    hook.create_dashboard("d", layout=[{"chart_id": chart["id"], "x": 0, "y": 0, "w": 6, "h": 4}])
    workflow = hook.create_workflow("w", {"steps": []})
    execution = hook.execute_workflow(workflow["id"])
    hook.cancel_execution(workflow["id"], execution["id"])
    hook.connect_data_source("s", "postgres", {"host": "db", "port": 5432, "database": "x", "user": "u"})
    hook.generate_report(["db_sales"])
    hook.generate_report(["db_sales"], idempotency_key="my-key-1")

    posts = [entry for entry in sandbox.state.requests if entry.method == "POST"]
    assert len(posts) == 8
    keys = [entry.headers.get("idempotency-key") for entry in posts]
    assert all(keys), keys
    assert keys[-1] == "my-key-1"
    assert len(set(keys)) == len(keys)


def test_close_and_reopen(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    hook = new_hook(hooks)
    first = hook.client
    hook.list_reports()
    hook.close()
    hook.close()  # twice is fine
    assert hook.client is not first
    assert hook.list_reports() == []


def test_errors_are_analytics_errors(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    hook = new_hook(hooks)
    with pytest.raises(AnalyticsError) as caught:
        hook.get_execution("wf_nightly_enrichment", "ex_missing")
    assert getattr(caught.value, "status", None) == 404
