"""The sandbox and the definitions validate one set of request bodies (``wire/_request_bodies.py``), so they agree.

Each case is a body the sandbox refuses over a real socket and the same object written as a definition: both name
the same field. What only one side decides is pinned beside it: a request may leave a layout item's position out
(the platform places it), a definition may not (docs/api-contract.md, "layout positions").
"""

from __future__ import annotations

from typing import Any, get_args

import httpx
import pytest

from airflow_provider_analytics.definitions._load import load_definitions
from airflow_provider_analytics.wire._contract import ChartType
from airflow_provider_analytics.wire._request_bodies import ChartTypeName
from airflow_provider_analytics.wire.errors import AnalyticsInputError

PLACED = {"x": 0, "y": 0, "w": 6, "h": 4}


def refused_definition(section: str, definition: dict[str, Any]) -> list[str]:
    """What the definitions say about ``definition``: ``<field>: <problem>``, one per problem."""
    with pytest.raises(AnalyticsInputError) as caught:
        load_definitions({section: [definition]})
    return [line.split(": ", 2)[2] for line in str(caught.value).splitlines()[1:]]


def test_the_chart_types_are_the_contracts() -> None:
    assert get_args(ChartTypeName) == tuple(member.value for member in ChartType)


@pytest.mark.parametrize(
    ("path", "body", "section", "definition", "field"),
    [
        (
            "/v1/workflows",
            {"name": "  ", "configuration": {}},
            "workflows",
            {"name": "  ", "configuration": {}},
            "name",
        ),
        (
            "/v1/charts",
            {"name": "c", "type": "line", "data_source_id": "ds_warehouse", "query": "q", "options": []},
            "charts",
            {"name": "c", "type": "line", "data_source": "ds_warehouse", "query": "q", "options": []},
            "options",
        ),
        (
            "/v1/dashboards",
            {"name": "d", "layout": [{"chart_id": "ch_revenue", **PLACED, "x": 2**53}]},
            "dashboards",
            {"name": "d", "layout": [{"chart": "ch_revenue", **PLACED, "x": 2**53}]},
            "layout[0].x",
        ),
        (
            "/v1/dashboards",
            {"name": "d", "layout": [{"chart_id": "ch_revenue", **PLACED, "w": 0}]},
            "dashboards",
            {"name": "d", "layout": [{"chart": "ch_revenue", **PLACED, "w": 0}]},
            "layout[0].w",
        ),
        (
            "/v1/dashboards",
            {"name": "d", "tags": ["ops", " "]},
            "dashboards",
            {"name": "d", "tags": ["ops", " "]},
            "tags[1]",
        ),
    ],
    ids=["blank-name", "options-not-a-mapping", "position-beyond-json", "size-zero", "blank-tag"],
)
def test_what_the_sandbox_refuses_the_definitions_refuse_in_the_same_field(
    client: httpx.Client, path: str, body: dict[str, Any], section: str, definition: dict[str, Any], field: str
) -> None:
    answer = client.post(path, json=body)

    assert answer.status_code == 422
    assert list(answer.json()["error"]["details"]["fields"]) == [field]
    assert [problem.split(": ", 1)[0] for problem in refused_definition(section, definition)] == [field]


def test_a_request_may_leave_a_position_out_and_a_definition_may_not(client: httpx.Client) -> None:
    answer = client.post("/v1/dashboards", json={"name": "d", "layout": [{"chart_id": "ch_revenue", "x": 2}]})

    assert answer.json()["layout"] == [{"chart_id": "ch_revenue", "x": 2, "y": 0, "w": 6, "h": 4}]
    assert refused_definition("dashboards", {"name": "d", "layout": [{"chart": "ch_revenue", "x": 2}]}) == [
        f"layout[0].{field}: is required: give each chart's grid position and size (x, y, w, h)" for field in "ywh"
    ]
