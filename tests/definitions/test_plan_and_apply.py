"""A plan on an empty workspace, its apply, and the second run that finds everything unchanged."""

from __future__ import annotations

import json
import logging
import re

import pytest

from airflow_provider_analytics.definitions._apply import apply_plan, plan_definitions
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.definitions.helpers import (
    CREATES,
    PASSWORD,
    READS,
    SEED,
    actions,
    add_workflows,
    definitions,
    logged,
    sent,
    workspace,
    writes,
)

ALL_CREATED = [
    ("data_source", "warehouse-v2", "create"),
    ("chart", "Revenue", "create"),
    ("chart", "Orders", "create"),
    ("dashboard", "Sales", "create"),
    ("workflow", "enrich-sales", "create"),
]


def test_a_plan_on_an_empty_workspace_creates_everything_after_four_reads(
    hook: AnalyticsHook, empty: SandboxServer
) -> None:
    plan = plan_definitions(hook, definitions())

    assert actions(plan) == ALL_CREATED
    assert plan.changes == tuple(change for change in plan.changes if change.action == "create")  # nothing else
    assert plan.writes
    assert plan.counts == {"create": 5, "update": 0, "unchanged": 0, "cannot_apply": 0, "not_managed": 0}
    assert sent(empty) == READS
    revenue = plan.changes[1]
    assert revenue.detail == "line chart on data source (new data source 'warehouse-v2')"
    as_xcom = json.loads(json.dumps(plan.to_dict()))  # JSON-compatible, as XCom needs
    assert as_xcom["counts"]["create"] == 5
    digest = as_xcom["changes"][3].pop("digest")  # of what the create would send (test_drift_and_review.py)
    assert re.fullmatch("[0-9a-f]{64}", digest)
    assert as_xcom["changes"][3] == {
        "kind": "dashboard",
        "name": "Sales",
        "action": "create",
        "id": None,
        "version": None,
        "fields": [],
        "detail": "2 charts (2 created by this plan)",
        "defined_in": "definitions: dashboards[0] 'Sales'",
        "pinned_id": None,
        "reads": [],  # the secrets kept in Airflow its create reads: a dashboard has none
    }


def test_the_apply_writes_in_dependency_order_with_the_ids_just_created(
    hook: AnalyticsHook, empty: SandboxServer, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    plan = plan_definitions(hook, definitions())
    before = len(empty.state.requests)

    applied = apply_plan(hook, plan, key_seed=SEED).to_dict()

    posts = writes(empty, before)
    assert [(entry.method, entry.path) for entry in posts] == CREATES
    assert all(entry.headers["idempotency-key"].startswith("apa-def-") for entry in posts)
    source_id = applied["written"][0]["id"]
    revenue_id, orders_id = applied["written"][1]["id"], applied["written"][2]["id"]
    assert [entry.json["data_source_id"] for entry in posts[1:3]] == [source_id, source_id]
    assert posts[3].json["layout"] == [
        {"chart_id": revenue_id, "x": 0, "y": 0, "w": 6, "h": 4},
        {"chart_id": orders_id, "x": 6, "y": 0, "w": 6, "h": 4},
    ]
    assert applied["counts"] == {"create": 5, "update": 0}
    assert [(item["kind"], item["name"], item["action"]) for item in applied["written"]] == ALL_CREATED
    assert applied["written"][3]["version"] == 1
    (dashboard,) = empty.state.dashboards("ws_default")
    assert (dashboard["id"], dashboard["description"], dashboard["tags"]) == (
        applied["written"][3]["id"],
        "Daily sales",
        ["finance", "daily"],
    )
    text = logged(capsys, caplog)
    lines = [
        f"Created data source 'warehouse-v2': {source_id}",
        f"Created chart 'Revenue': {revenue_id}",
        f"Created chart 'Orders': {orders_id}",
        f"Created dashboard 'Sales': {dashboard['id']}",
        f"Created workflow 'enrich-sales': {applied['written'][4]['id']}",
    ]
    assert [text.count(line) for line in lines] == [1] * 5
    assert sorted(lines, key=text.index) == lines  # one line per write, in the order written
    assert "KIND" in text  # the plan's table, logged by plan_definitions
    assert PASSWORD not in text


def test_a_second_run_finds_everything_unchanged_and_sends_only_the_reads(
    hook: AnalyticsHook, empty: SandboxServer, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    apply_plan(hook, plan_definitions(hook, definitions()), key_seed=SEED)
    before = len(empty.state.requests)
    caplog.set_level(logging.INFO)

    again = plan_definitions(hook, definitions())
    applied = apply_plan(hook, again, key_seed="another run")

    assert sent(empty, before) == READS
    assert [action for _, _, action in actions(again)] == ["unchanged"] * 5
    assert not again.writes
    assert applied.to_dict() == {"counts": {"create": 0, "update": 0}, "written": []}
    source = again.changes[0]
    assert source.detail.endswith("; not compared: connection.password")  # write-only: never returned
    text = logged(capsys, caplog)
    assert "Nothing to apply" in text
    assert PASSWORD not in text
    assert PASSWORD not in json.dumps(again.to_dict())
    assert PASSWORD not in repr(again)


def test_the_table_has_one_row_per_object_in_fixed_width_columns(hook: AnalyticsHook, sandbox: SandboxServer) -> None:
    document = {"charts": [{"name": "Revenue\nforged row", "type": "line", "data_source": "warehouse", "query": "q"}]}

    table = plan_definitions(hook, document).table().splitlines()

    assert table[0] == ("Definitions plan: 1 to create, 0 to update, 0 unchanged, 0 cannot apply, 38 not managed here")
    header, first = table[1], table[2]  # the definitions' rows come first
    assert header.split() == ["KIND", "NAME", "ACTION", "DETAIL"]
    assert first.split()[:4] == ["chart", "Revenue", "forged", "row"]  # a line break in a name stays in its row
    assert first.index("create") == header.index("ACTION")
    assert first.index("line chart on data source ds_warehouse") == header.index("DETAIL")
    # What no definition names: one row per kind, however many objects (all of them are in plan.to_dict()).
    assert len(table) == 2 + 1 + 4 + 1
    assert table[-1] == "Secrets this apply reads from Airflow: none"  # said even when none: a reviewer reads it
    last = table[-2]
    assert last.split()[:4] == ["workflow", "(26", "objects)", "not_managed"]
    assert last.index("nightly-enrichment, churn-scoring,") == header.index("DETAIL")
    assert last.endswith("and 21 more")


def test_objects_no_definition_names_are_listed_as_not_managed_and_left_alone(
    hook: AnalyticsHook, sandbox: SandboxServer
) -> None:
    document = {
        "charts": [
            {"name": "By id", "type": "bar", "data_source": "ds_events", "query": "select 1"},
            {"name": "By name", "type": "bar", "data_source": "crm", "query": "select 2"},
        ],
        "dashboards": [
            {
                "name": "Mixed",
                "layout": [
                    {"chart": "ch_revenue", "x": 0, "y": 0, "w": 4, "h": 4},  # a platform chart by id
                    {"chart": "Daily active users", "x": 4, "y": 0, "w": 4, "h": 4},  # ... by name
                    {"chart": "By id", "x": 8, "y": 0, "w": 4, "h": 4},  # ... defined here
                ],
            }
        ],
    }

    plan = plan_definitions(hook, document)
    applied = apply_plan(hook, plan, key_seed=SEED).to_dict()

    not_managed = [(change.kind, change.id) for change in plan.changes if change.action == "not_managed"]
    assert not_managed[:3] == [("data_source", "ds_warehouse"), ("data_source", "ds_events"), ("data_source", "ds_crm")]
    assert plan.counts["not_managed"] == 3 + 6 + 3 + 26
    revenue = next(change for change in plan.changes if change.id == "ch_revenue")
    assert (revenue.name, revenue.action) == ("Daily revenue", "not_managed")
    assert revenue.detail == "ch_revenue: no definition names it; left as it is"
    posts = writes(sandbox)
    assert [entry.json["data_source_id"] for entry in posts[:2]] == ["ds_events", "ds_crm"]
    assert [item["chart_id"] for item in posts[2].json["layout"]] == [
        "ch_revenue",
        "ch_active_users",
        applied["written"][0]["id"],
    ]
    assert len(sandbox.state.charts("ws_default")) == 6 + 2  # nothing deleted


def test_the_reads_follow_every_page_with_one_listing_per_kind(hook: AnalyticsHook, sandbox: SandboxServer) -> None:
    add_workflows(sandbox, 120)  # 26 seeded + 120: two pages of 100

    plan = plan_definitions(hook, {"workflows": [{"name": "bulk-119", "configuration": {"steps": []}}]})

    assert sent(sandbox) == [*READS, ("GET", "/v1/workflows")]
    assert sandbox.state.requests[-1].query.get("cursor")
    assert actions(plan) == [("workflow", "bulk-119", "unchanged")]
    assert plan.counts["not_managed"] == 3 + 6 + 3 + 26 + 119


def test_a_dashboard_edited_on_the_platform_is_updated_with_its_version(
    hook: AnalyticsHook, empty: SandboxServer
) -> None:
    apply_plan(hook, plan_definitions(hook, definitions()), key_seed=SEED)
    with empty.state.lock:  # someone edits it in the platform's UI
        (record,) = workspace(empty).dashboards.values()
        record.description, record.tags, record.version = "Edited in the UI", ["finance"], 2

    plan = plan_definitions(hook, definitions())

    (change,) = [change for change in plan.changes if change.action == "update"]
    assert (change.kind, change.name, change.id, change.version) == ("dashboard", "Sales", record.id, 2)
    assert [field.to_dict() for field in change.fields] == [
        {"field": "description", "before": "Edited in the UI", "after": "Daily sales"},
        {"field": "tags", "before": ["finance"], "after": ["finance", "daily"]},
    ]
    assert change.detail == (
        f'{record.id} at version 2: description: "Edited in the UI" -> "Daily sales"; tags: ["finance"] ->'
        ' ["finance", "daily"]'
    )
    before = len(empty.state.requests)

    applied = apply_plan(hook, plan, key_seed=SEED).to_dict()

    (put,) = writes(empty, before)
    assert (put.method, put.path, put.headers["if-match"]) == ("PUT", f"/v1/dashboards/{record.id}", '"2"')
    assert applied["written"] == [
        {"kind": "dashboard", "name": "Sales", "id": record.id, "action": "update", "version": 3}
    ]
    (dashboard,) = empty.state.dashboards("ws_default")
    assert (dashboard["description"], dashboard["tags"]) == ("Daily sales", ["finance", "daily"])
    assert actions(plan_definitions(hook, definitions()))[3] == ("dashboard", "Sales", "unchanged")


def test_a_moved_chart_is_a_layout_update(hook: AnalyticsHook, empty: SandboxServer) -> None:
    apply_plan(hook, plan_definitions(hook, definitions()), key_seed=SEED)
    moved = definitions()
    moved["dashboards"][0]["layout"][1]["y"] = 4

    plan = plan_definitions(hook, moved)

    (change,) = [change for change in plan.changes if change.action == "update"]
    assert [field.field for field in change.fields] == ["layout"]
    assert change.fields[0].before[1]["y"] == 0
    assert change.fields[0].after[1]["y"] == 4
    assert change.detail.endswith("at version 1: layout: 2 -> 2 charts, item 1 changed")
