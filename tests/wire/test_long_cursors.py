"""A listing's ``next_cursor`` is untrusted: one no URL can carry ends the listing with a typed error before
anything is sent, and the cursors a listing remembers (to see a loop) cost the same whatever their length."""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from typing import Any

import pytest

from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._calls import MAX_CURSOR_LENGTH
from airflow_provider_analytics.wire.client import AnalyticsClient, AsyncAnalyticsClient
from airflow_provider_analytics.wire.errors import UnexpectedResponseError
from tests.support.fixtures import Api, make_config
from tests.support.names import JSON_HEADERS

LISTING = "/v1/workflows"


def _page(cursor: str | None, items: list[Any] | None = None) -> Fault:
    body = json.dumps({"data": items if items is not None else [{"id": "wf_1"}], "next_cursor": cursor})
    return Fault.respond(200, headers=JSON_HEADERS, body=body, path=f"{LISTING}$")


def _listing_requests(sandbox: SandboxServer) -> list[Any]:
    return [entry for entry in sandbox.state.requests if entry.path == LISTING]


@pytest.mark.parametrize("length", [MAX_CURSOR_LENGTH + 1, 70_000])
def test_an_over_long_cursor_ends_the_listing_before_sending(api: Api, sandbox: SandboxServer, length: int) -> None:
    # 70,000 characters is past httpx's cap on a URL component: without the bound, httpx.InvalidURL.
    sandbox.state.inject(_page("c" * length))
    with pytest.raises(UnexpectedResponseError, match=rf"GET {LISTING}: .*next_cursor is {length} characters"):
        api.items(endpoints.list_workflows())
    assert len(_listing_requests(sandbox)) == 1, "the over-long cursor must not be sent"


def test_a_cursor_at_the_bound_is_followed(api: Api, sandbox: SandboxServer) -> None:
    cursor = "c" * MAX_CURSOR_LENGTH
    sandbox.state.inject(_page(cursor), _page(None, [{"id": "wf_2"}]))
    assert [item["id"] for item in api.items(endpoints.list_workflows())] == ["wf_1", "wf_2"]
    first, second = _listing_requests(sandbox)
    assert "cursor" not in first.query
    assert second.query["cursor"] == cursor


def test_a_cursor_that_is_not_text_ends_the_listing(api: Api, sandbox: SandboxServer) -> None:
    # JSON admits a lone surrogate; UTF-8 cannot encode it, so no URL can carry it (it was a UnicodeEncodeError).
    sandbox.state.inject(
        Fault.respond(200, headers=JSON_HEADERS, body='{"data": [], "next_cursor": "c\\ud800"}', path=f"{LISTING}$")
    )
    with pytest.raises(UnexpectedResponseError, match=rf"GET {LISTING}: .*next_cursor .* not valid text"):
        api.items(endpoints.list_workflows())
    assert len(_listing_requests(sandbox)) == 1


PAGES = 40
CURSOR = MAX_CURSOR_LENGTH - 8
FIRST, LAST = 4, PAGES - 1  # the items (one a page) at which the client's memory is looked at


def _held_from_answers() -> tracemalloc.Snapshot:
    """What is still allocated from parsing answers' JSON (wire/_bodies.py), the listing's pages among it."""
    return tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, "*/wire/_bodies.py", all_frames=True)])


def _size(snapshot: tracemalloc.Snapshot) -> int:
    return sum(stat.size for stat in snapshot.statistics("filename"))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_remembered_cursors_do_not_grow_with_their_length(sandbox: SandboxServer, mode: str) -> None:
    # PAGES pages of one item each, with distinct cursors of ~4 KiB, then a last page.
    sandbox.state.inject(*(_page(f"{index:08d}" + "c" * CURSOR) for index in range(PAGES)), _page(None))
    config = make_config(sandbox)
    held: dict[int, tracemalloc.Snapshot] = {}

    def look(index: int) -> None:
        if index in (FIRST, LAST):
            held[index] = _held_from_answers()

    tracemalloc.start(6)  # deep enough to see wire/_bodies.py under json's own frames
    try:
        if mode == "sync":
            with AnalyticsClient(config) as client:
                for index, _ in enumerate(client.paginate(endpoints.list_workflows())):
                    look(index)
        else:

            async def walk() -> None:
                async with AsyncAnalyticsClient(config) as client:
                    index = 0
                    async for _ in client.paginate(endpoints.list_workflows()):
                        look(index)
                        index += 1

            asyncio.run(walk())
    finally:
        tracemalloc.stop()
    assert len(_listing_requests(sandbox)) == PAGES + 1
    # The page being read is held, its cursor with it: the measurement sees a parsed cursor.
    assert _size(held[FIRST]) >= CURSOR
    # From there on, nothing more is: as text, the 35 cursors followed in between would be over 140 KB.
    growth = sum(stat.size_diff for stat in held[LAST].compare_to(held[FIRST], "filename"))
    assert growth < CURSOR // 2, f"{growth} bytes more held after {LAST - FIRST} more pages"
