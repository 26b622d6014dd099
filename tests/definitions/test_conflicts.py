"""What the apply refuses: a concurrent edit of a dashboard, objects the API cannot update, ambiguous references."""

from __future__ import annotations

import json
import re
import secrets

import pytest

from airflow_provider_analytics.definitions._apply import apply_plan, plan_definitions
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import AnalyticsInputError, PreconditionFailedError
from tests.definitions.helpers import READS, SEED, actions, definitions, sent, writes
from tests.support.connections import new_hook


def test_a_dashboard_edited_between_plan_and_apply_fails_the_apply_and_keeps_the_edit(
    hook: AnalyticsHook, empty: SandboxServer, fresh_hooks: list[AnalyticsHook]
) -> None:
    apply_plan(hook, plan_definitions(hook, definitions()), key_seed=SEED)
    changed = definitions()
    changed["dashboards"][0]["description"] = "Daily sales, by region"
    plan = plan_definitions(hook, changed)
    (update,) = [change for change in plan.changes if change.action == "update"]
    assert update.version == 1
    someone = new_hook(fresh_hooks)  # another user, through the API, after the plan read version 1
    theirs = someone.update_dashboard(update.id or "", "Sales", "Their words", ["finance"], [], if_match=1)
    before = len(empty.state.requests)

    with pytest.raises(PreconditionFailedError, match="at version 2"):
        apply_plan(hook, plan, key_seed=SEED)

    (put,) = writes(empty, before)
    assert (put.method, put.headers["if-match"], put.status) == ("PUT", '"1"', 412)
    (dashboard,) = empty.state.dashboards("ws_default")
    assert dashboard == theirs  # nothing overwritten
    assert dashboard["description"] == "Their words"


def test_an_update_applied_twice_is_one_update(hook: AnalyticsHook, empty: SandboxServer) -> None:
    apply_plan(hook, plan_definitions(hook, definitions()), key_seed=SEED)
    changed = definitions()
    changed["dashboards"][0]["tags"] = ["finance"]
    plan = plan_definitions(hook, changed)

    first = apply_plan(hook, plan, key_seed=SEED).to_dict()["written"]
    again = apply_plan(hook, plan, key_seed=SEED).to_dict()["written"]  # a retried task with the plan it made

    assert first == again
    assert first[0]["version"] == 2
    (dashboard,) = empty.state.dashboards("ws_default")
    assert (dashboard["version"], dashboard["tags"]) == (2, ["finance"])


@pytest.mark.parametrize(
    ("section", "edit", "field"),
    [
        ("charts", {"query": "select day, revenue from sales_v2"}, "query"),
        ("charts", {"type": "area"}, "type"),
        ("workflows", {"configuration": {"steps": []}}, "configuration"),
        ("workflows", {"description": "now described"}, "description"),
        (
            "data_sources",
            {"connection": {"host": "db-new-host", "database": "sales", "user": "svc"}},
            "connection.host",
        ),
        ("data_sources", {"type": "mysql"}, "type"),
    ],
)
def test_a_changed_chart_workflow_or_data_source_cannot_be_applied_and_nothing_is_sent(
    hook: AnalyticsHook, empty: SandboxServer, section: str, edit: dict[str, object], field: str
) -> None:
    apply_plan(hook, plan_definitions(hook, definitions()), key_seed=SEED)
    changed = definitions()
    changed[section][0].update(edit)
    changed["dashboards"][0]["description"] = "an update that could be applied"
    plan = plan_definitions(hook, changed)
    label = {"charts": "chart", "workflows": "workflow", "data_sources": "data source"}[section]

    (blocked,) = plan.blocked
    assert blocked.action == "cannot_apply"
    assert [change.field for change in blocked.fields] == [field]
    assert f"the API has no update for a {label}: give the definition a new name" in blocked.detail
    assert "nothing is deleted" in blocked.detail
    before = len(empty.state.requests)

    with pytest.raises(AnalyticsInputError) as refused:
        apply_plan(hook, plan, key_seed=SEED)

    assert sent(empty, before) == []  # not even the dashboard's update
    message = str(refused.value)
    assert "The plan has 1 object(s) that differ from the platform's and that the API cannot update" in message
    assert f"  - {label} {blocked.name!r}: {blocked.id}: {field} differs" in message
    assert "db-new-host" not in json.dumps(plan.to_dict()) + message  # connection values are never shown


def test_renaming_a_changed_chart_creates_a_new_one_beside_the_old(hook: AnalyticsHook, empty: SandboxServer) -> None:
    apply_plan(hook, plan_definitions(hook, definitions()), key_seed=SEED)
    renamed = definitions()
    renamed["charts"][0].update(name="Revenue v2", query="select day, revenue from sales_v2")
    renamed["dashboards"][0]["layout"][0]["chart"] = "Revenue v2"

    plan = plan_definitions(hook, renamed)
    apply_plan(hook, plan, key_seed=SEED)

    assert actions(plan)[1:4] == [
        ("chart", "Revenue v2", "create"),
        ("chart", "Orders", "unchanged"),
        ("dashboard", "Sales", "update"),
    ]
    assert [change.name for change in plan.changes if change.action == "not_managed"] == ["Revenue"]
    assert sorted(chart["name"] for chart in empty.state.charts("ws_default")) == ["Orders", "Revenue", "Revenue v2"]


def test_a_definition_whose_name_several_platform_objects_share_is_refused_after_the_reads(
    hook: AnalyticsHook, sandbox: SandboxServer
) -> None:
    twins = [hook.create_chart("Twin", "line", "ds_warehouse", "select 1") for _ in range(2)]
    before = len(sandbox.state.requests)
    document = {"charts": [{"name": "Twin", "type": "line", "data_source": "ds_warehouse", "query": "select 1"}]}

    with pytest.raises(AnalyticsInputError) as refused:
        plan_definitions(hook, document)

    assert sent(sandbox, before) == READS
    ids = ", ".join(chart["id"] for chart in twins)
    assert (
        f"  - definitions: charts[0] 'Twin': name: 2 charts on the platform are named 'Twin' ({ids}), so this"
        " definition cannot tell which it manages" in str(refused.value)
    )


def test_dangling_and_ambiguous_references_are_all_reported_before_any_write(
    hook: AnalyticsHook, sandbox: SandboxServer
) -> None:
    twins = [hook.create_chart("Twin", "line", "ds_warehouse", "select 1") for _ in range(2)]
    before = len(sandbox.state.requests)
    document = {
        "charts": [{"name": "Lost", "type": "bar", "data_source": "warehouse-typo", "query": "select 1"}],
        "dashboards": [
            {
                "name": "Board",
                "layout": [
                    {"chart": "Twin", "x": 0, "y": 0, "w": 6, "h": 4},
                    {"chart": "ch_missing", "x": 6, "y": 0, "w": 6, "h": 4},
                    {"chart": "Lost", "x": 0, "y": 4, "w": 6, "h": 4},  # defined above: fine
                ],
            }
        ],
    }

    with pytest.raises(AnalyticsInputError) as refused:
        plan_definitions(hook, document)

    assert sent(sandbox, before) == READS
    lines = str(refused.value).splitlines()
    assert lines[0] == "The definitions have 3 problems; nothing was changed on the platform:"
    assert lines[1] == (
        "  - definitions: charts[0] 'Lost': data_source: 'warehouse-typo' names no data source in the definitions"
        " or on the platform (by name or id); define it under data_sources, or correct the reference"
    )
    assert lines[2] == (
        f"  - definitions: dashboards[0] 'Board': layout[0].chart: 'Twin' names 2 charts on the platform"
        f" ({twins[0]['id']}, {twins[1]['id']}) and none in the definitions; use the id of the one meant"
    )
    assert re.match(
        r"  - definitions: dashboards\[0\] 'Board': layout\[1\]\.chart: 'ch_missing' names no chart", lines[3]
    )


def test_a_platform_id_in_a_reference_is_used_as_it_is(hook: AnalyticsHook, sandbox: SandboxServer) -> None:
    twins = [hook.create_chart("Twin", "line", "ds_warehouse", "select 1") for _ in range(2)]
    document = {
        "dashboards": [{"name": "Board", "layout": [{"chart": twins[1]["id"], "x": 0, "y": 0, "w": 6, "h": 4}]}]
    }

    plan = plan_definitions(hook, document)

    board = next(change for change in plan.changes if change.name == "Board")
    assert board.refs == (twins[1]["id"],)
    assert actions(plan) == [("dashboard", "Board", "create")]


def test_a_definition_over_the_platform_s_bound_fails_the_plan(hook: AnalyticsHook, empty: SandboxServer) -> None:
    document = definitions()
    document["workflows"][0]["configuration"] = {"script": "x" * (1024 * 1024)}  # over the 1 MiB a body may have

    with pytest.raises(AnalyticsInputError) as refused:
        plan_definitions(hook, document)

    assert sent(empty) == []  # refused before the listings
    assert str(refused.value).splitlines()[1:] == [
        "  - definitions: workflows[0] 'enrich-sales': the workflow takes over 1 MiB as JSON (the limit is passed at"
        " configuration.script), more than the platform accepts in one request: make it smaller"
    ]


def test_a_value_read_from_airflow_that_makes_a_write_too_large_fails_the_apply_before_the_first_write(
    hook: AnalyticsHook, empty: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only an apply reads it. Random: a value read is remembered as a secret for the rest of the process, and "x"
    # * 1000 masked the "xxx..." text a later test (tests/operators/test_answers_checked.py) expects to see cut.
    monkeypatch.setenv("AIRFLOW_VAR_ANALYTICS_SCRIPT", secrets.token_hex(500))
    document = definitions()
    # Under the 1 MiB a body may have as written (a plan takes it), over it once the apply fills the reference in.
    document["workflows"][0]["configuration"] = {"script": {"from_variable": "analytics_script"}}
    document["workflows"][0]["description"] = "d" * (1024 * 1024 - 300)
    plan = plan_definitions(hook, document)
    before = len(empty.state.requests)

    with pytest.raises(AnalyticsInputError) as refused:
        hook.apply_plan(plan, key_seed=SEED)

    assert sent(empty, before) == []  # not even the data source, first in order
    assert str(refused.value).splitlines()[1:] == [
        "  - definitions: workflows[0] 'enrich-sales': the workflow takes over 1 MiB as JSON (the limit is passed at"
        " description); the platform accepts at most 1 MiB in one request: make it smaller"
    ]


@pytest.mark.parametrize("seed", ["", "   ", None])
def test_an_apply_needs_a_key_seed(hook: AnalyticsHook, empty: SandboxServer, seed: object) -> None:
    plan = plan_definitions(hook, definitions())

    with pytest.raises(AnalyticsInputError, match="key_seed must be a non-empty string"):
        apply_plan(hook, plan, key_seed=seed)  # type: ignore[arg-type]  # what a bad template renders

    assert writes(empty) == []
