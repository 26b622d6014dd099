"""What a plan reads of the platform's listings is bounded, against the sandbox: a page holding more items than its
``limit`` is no page of the contract's, and all the listings together hold at most ``MOST_LISTED_BYTES`` of JSON
(``MOST_LISTED_OBJECTS`` objects). A hostile platform answering pages of 78,000 dashboards, each with a new cursor,
took a plan past 1.6 GiB of memory in 20 pages (it may send 10,000)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_analytics.definitions._read import MOST_LISTED_BYTES
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import UnexpectedResponseError
from tests.definitions.helpers import sent

PAGE = 100  # what a plan asks for: the contract's largest limit


def workflow(index: int, text: int) -> dict[str, Any]:
    return {"id": f"wf_listed{index:08}", "name": f"listed-{index}", "description": "",
            "configuration": {"notes": "n" * text}, "created_at": "2026-11-20T00:00:00Z",
            "updated_at": "2026-11-20T00:00:00Z"}  # fmt: skip


def serve_workflow_pages(sandbox: SandboxServer, pages: list[list[dict[str, Any]]]) -> None:
    """Each page once, in order, each with a cursor of its own (the last one too: the listing never ends)."""
    for number, items in enumerate(pages):
        body = json.dumps({"data": items, "next_cursor": f"page-{number + 1}"})
        headers = {"Content-Type": "application/json"}
        sandbox.state.inject(Fault.respond(200, headers=headers, body=body, method="GET", path="^/v1/workflows$"))


def test_a_page_holding_more_items_than_asked_for_is_refused_at_once(empty: SandboxServer, hook: AnalyticsHook) -> None:
    serve_workflow_pages(empty, [[workflow(index, 10) for index in range(PAGE + 1)], []])

    with pytest.raises(UnexpectedResponseError, match=f"a page of {PAGE + 1} items, asked for at most {PAGE}"):
        hook.plan_definitions({"workflows": []})

    assert [path for _, path in sent(empty)].count("/v1/workflows") == 1  # no second page asked for


def test_listings_past_the_budget_in_bytes_stop_being_read(empty: SandboxServer, hook: AnalyticsHook) -> None:
    text = 7000  # about 700 KB a page, within the answer cap (3 MiB): the budget is passed near page 96
    pages_needed = MOST_LISTED_BYTES // (PAGE * text) + 1
    pages = [[workflow(page * PAGE + index, text) for index in range(PAGE)] for page in range(pages_needed + 3)]
    serve_workflow_pages(empty, pages)

    with pytest.raises(UnexpectedResponseError, match="listings hold over 100,000 objects or 64 MiB of JSON"):
        hook.plan_definitions({"workflows": []})

    asked = [path for _, path in sent(empty)].count("/v1/workflows")
    assert pages_needed - 2 <= asked <= pages_needed + 1  # stopped where the budget ran out, not at the end
