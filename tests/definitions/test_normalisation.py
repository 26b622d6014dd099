"""What the comparison ignores and what it does not, on platform objects shaped as another platform could send them.

The sandbox always answers in one shape; these cases give the pure planner objects it never sends (``null``
descriptions, masked connection fields, numbers written as floats, fields of its own) to pin each decision
``_plan``'s docstring records.
"""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_analytics.definitions._load import load_definitions
from airflow_provider_analytics.definitions._plan import Existing, Plan, make_plan
from airflow_provider_analytics.wire.errors import UnexpectedResponseError

STAMPS = {"created_at": "2026-11-01T00:00:00Z", "updated_at": "2026-11-02T00:00:00Z"}
SOURCE = {"id": "ds_1", "name": "wh", "type": "postgres", "sync": {"status": "synced"}, **STAMPS}
CHART = {"id": "ch_1", "name": "Revenue", "type": "line", "data_source_id": "ds_1", "query": "q", **STAMPS}
BOARD = {"id": "db_1", "name": "Sales", "version": 7, **STAMPS}
FLOW = {"id": "wf_1", "name": "flow", "configuration": {"steps": []}, **STAMPS}
DOCUMENT: dict[str, Any] = {
    "data_sources": [
        {
            "name": "wh",
            "type": "postgres",
            "connection": {
                "host": "db",
                "sslmode": "require",
                "password": "pw",
                "ssl": {"mode": "v", "key_token": "t"},
            },
        }
    ],
    "charts": [{"name": "Revenue", "type": "line", "data_source": "wh", "query": "q", "options": {"width": 2}}],
    "dashboards": [
        {"name": "Sales", "tags": ["a", "b"], "layout": [{"chart": "Revenue", "x": 0, "y": 0, "w": 6, "h": 4}]}
    ],
    "workflows": [{"name": "flow", "configuration": {"steps": []}}],
}


def plan_against(source: dict[str, Any], chart: dict[str, Any], board: dict[str, Any], flow: dict[str, Any]) -> Plan:
    existing = Existing((source,), (chart,), (board,), (flow,))
    return make_plan(load_definitions(DOCUMENT), existing)


def test_what_the_platform_fills_in_or_leaves_out_is_not_a_difference() -> None:
    plan = plan_against(
        # host masked, port a platform default, a secret inside a field left out
        {**SOURCE, "connection": {"host": "****", "port": 5432, "ssl": {"mode": "v"}}},
        {**CHART, "options": {"width": 2.0}, "owner": "someone"},  # a float for an int; a field of its own
        {
            **BOARD,
            "description": None,
            "tags": ["a", "b"],
            "layout": [{"chart_id": "ch_1", "x": 0, "y": 0, "w": 6, "h": 4, "z": 1}],
        },
        {**FLOW, "description": None},
    )

    assert [(change.action, change.id) for change in plan.changes] == [
        ("unchanged", "ds_1"),
        ("unchanged", "ch_1"),
        ("unchanged", "db_1"),
        ("unchanged", "wf_1"),
    ]
    assert plan.changes[0].detail == "ds_1; not compared: connection.host, connection.sslmode, connection.password"
    assert plan.changes[2].version == 7
    assert not plan.writes


@pytest.mark.parametrize(
    ("chart", "fields"),
    [
        ({**CHART, "options": {"width": True}}, ["options"]),  # true is not 1
        ({**CHART, "options": None, "data_source_id": "ds_other"}, ["data_source_id", "options"]),  # null is {}
        ({**CHART, "options": {"width": 2}, "query": "q "}, ["query"]),  # strings compare exactly
    ],
)
def test_differences_that_count(chart: dict[str, Any], fields: list[str]) -> None:
    board = {
        **BOARD,
        "description": "",
        "tags": ["a", "b"],
        "layout": [{"chart_id": "ch_1", "x": 0, "y": 0, "w": 6, "h": 4}],
    }

    plan = plan_against({**SOURCE, "connection": {}}, chart, board, FLOW)

    assert plan.changes[1].action == "cannot_apply"
    assert [change.field for change in plan.changes[1].fields] == fields


def test_tags_keep_their_order_and_a_connection_field_that_differs_is_named_without_values() -> None:
    plan = plan_against(
        {**SOURCE, "connection": {"host": "db-old", "sslmode": "require"}},
        {**CHART, "options": {"width": 2}},
        {
            **BOARD,
            "description": "",
            "tags": ["b", "a"],
            "layout": [{"chart_id": "ch_1", "x": 0, "y": 0, "w": 6, "h": 4}],
        },
        FLOW,
    )

    source, _, board, _ = plan.changes
    assert source.action == "cannot_apply"
    assert [field.to_dict() for field in source.fields] == [
        {"field": "connection.host", "before": "(not shown)", "after": "(not shown)"}
    ]
    assert "db-old" not in str(plan.to_dict())
    assert (board.action, board.version, [field.field for field in board.fields]) == ("update", 7, ["tags"])


def test_a_dashboard_to_update_without_a_valid_version_is_not_updated_blindly() -> None:
    board = {**BOARD, "version": "7", "description": "changed on the platform"}

    with pytest.raises(UnexpectedResponseError, match="dashboard db_1 has no valid 'version'"):
        plan_against({**SOURCE, "connection": {}}, {**CHART, "options": {"width": 2}}, board, FLOW)
