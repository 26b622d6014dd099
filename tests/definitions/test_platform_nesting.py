"""A platform answer nested deeper than definitions can hold fails a plan and an export at once, naming the object,
before any comparison recurses into it (a chart's options 900 levels deep used to end the task in a RecursionError).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_analytics.definitions._model import MAX_DEPTH
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import UnexpectedResponseError

CHART = {"name": "Deep", "type": "line", "data_source": "ds_warehouse", "query": "select 1"}


def nested(depth: int) -> dict[str, Any]:
    """A value whose deepest scalar is ``depth`` levels down, counting the value itself as level 1."""
    value: Any = "bottom"
    for _ in range(depth - 1):
        value = {"x": value}
    return value  # type: ignore[no-any-return]


def platform_lists_a_chart_with(sandbox: SandboxServer, options: dict[str, Any]) -> None:
    chart = {
        "id": "ch_deep00000001",
        "name": "Deep",
        "type": "line",
        "data_source_id": "ds_warehouse",
        "query": "select 1",
        "options": options,
        "created_at": "2026-11-20T00:00:00Z",
        "updated_at": "2026-11-20T00:00:00Z",
    }
    body = json.dumps({"data": [chart]})
    headers = {"Content-Type": "application/json"}
    sandbox.state.inject(Fault.respond(200, headers=headers, body=body, path="/v1/charts$"))


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 900])
def test_a_plan_of_a_workspace_holding_too_deep_a_value_fails_naming_the_object(
    sandbox: SandboxServer, hook: AnalyticsHook, depth: int
) -> None:
    platform_lists_a_chart_with(sandbox, nested(depth))
    before = len(sandbox.state.requests)

    with pytest.raises(UnexpectedResponseError) as raised:
        hook.plan_definitions({"charts": [{**CHART, "options": {"y": 1}}]})

    assert str(raised.value) == (
        "the platform listed a chart (ch_deep00000001, named 'Deep') holding a value nested more than "
        f"{MAX_DEPTH} levels deep, which definitions can neither hold nor compare: flatten it on the platform"
    )
    sent = [(entry.method, entry.path) for entry in sandbox.state.requests[before:]]
    assert sent == [("GET", "/v1/data-sources"), ("GET", "/v1/charts")]  # no further listing after it


def test_a_value_as_deep_as_definitions_allow_is_planned_and_exported(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    platform_lists_a_chart_with(sandbox, nested(MAX_DEPTH))
    plan = hook.plan_definitions({"charts": [{**CHART, "options": {"y": 1}}]})
    assert [change.action for change in plan.changes if change.name == "Deep"] == ["cannot_apply"]

    platform_lists_a_chart_with(sandbox, nested(MAX_DEPTH))
    exported = hook.export_definitions(kinds=["charts"])
    assert [chart["options"] == nested(MAX_DEPTH) for chart in exported["charts"] if chart["name"] == "Deep"] == [True]


def test_an_export_of_too_deep_a_value_fails_alike(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    platform_lists_a_chart_with(sandbox, nested(MAX_DEPTH + 1))

    with pytest.raises(UnexpectedResponseError, match=f"nested more than {MAX_DEPTH} levels deep"):
        hook.export_definitions(kinds=["charts"])
