"""An apply says only what is true: keys no later run replays, answers that are the object asked for, and
dashboard updates that keep what the platform holds beyond the definitions' fields."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from airflow_provider_analytics.definitions._apply import apply_plan, plan_definitions
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import UnexpectedResponseError
from tests.definitions.helpers import SEED, definitions, logged, workspace, writes
from tests.support.context import make_context, retry_context

WORKFLOWS = {"workflows": definitions()["workflows"]}


def forget_workflows(sandbox: SandboxServer) -> None:
    """Someone deletes the workflows on the platform (its idempotency keys stay, as the contract's do)."""
    with sandbox.state.lock:
        workspace(sandbox).workflows.clear()


def create_keys(sandbox: SandboxServer, since: int = 0) -> list[str]:
    return [entry.headers["idempotency-key"] for entry in writes(sandbox, since) if entry.method == "POST"]


# Keys: unique per call without a seed; per task instance, across tries, with the operator -------------------


def test_an_unseeded_apply_never_replays_an_earlier_runs_create(hook: AnalyticsHook, empty: SandboxServer) -> None:
    first = hook.apply_plan(hook.plan_definitions(WORKFLOWS)).written[0]
    forget_workflows(empty)

    plan = hook.plan_definitions(WORKFLOWS)  # a later run: the same definitions, the same plan
    second = hook.apply_plan(plan).written[0]

    held = {record.id: record.name for record in workspace(empty).workflows.values()}
    assert held == {second.id: "enrich-sales"}  # what the apply reported is on the platform
    assert second.id != first.id
    first_key, second_key = create_keys(empty)
    assert first_key != second_key


def test_an_unseeded_apply_of_one_plan_twice_sends_fresh_keys(hook: AnalyticsHook, empty: SandboxServer) -> None:
    plan = hook.plan_definitions(WORKFLOWS)
    hook.apply_plan(plan)
    hook.apply_plan(plan)  # a stale plan applied again is a second create: nothing seeds a replay

    assert len(set(create_keys(empty))) == 2
    assert len(workspace(empty).workflows) == 2


def test_the_operator_seeds_by_task_instance_so_only_its_retries_replay(empty: SandboxServer) -> None:
    def key_of(context: Any) -> str:
        before = len(empty.state.requests)
        ApplyDefinitionsOperator(task_id=context["ti"].task_id, definitions=WORKFLOWS).execute(context)
        forget_workflows(empty)  # so that the next execute plans the create again
        (key,) = create_keys(empty, before)
        return key

    first = key_of(make_context())
    assert key_of(retry_context(2)) == first  # a retry of the same task instance replays its creates
    other_run = retry_context(1)
    other_run["ti"].run_id = "scheduled__2026-11-21T00:00:00+00:00"
    mapped = retry_context(1)
    mapped["ti"].map_index = 3
    other_dag = retry_context(1)
    other_dag["ti"].dag_id = "another_dag"
    other_task = retry_context(1)
    other_task["ti"].task_id = "apply_2"
    others = [key_of(other_run), key_of(mapped), key_of(other_dag), key_of(other_task)]
    assert len({first, *others}) == 5


# A write's answer must be the object asked for ----------------------------------------------------------------


def answer(document: dict[str, Any], path: str) -> Fault:
    body = json.dumps(document)
    return Fault.respond(201, headers={"Content-Type": "application/json"}, body=body, method="POST", path=path)


WORKFLOW_ANSWER = {"id": "wf_9", "name": "enrich-sales", "description": "", "configuration": {"steps": []}}
CHART_ANSWER = {"id": "ch_9", "name": "Revenue", "type": "line", "data_source_id": "ds_warehouse", "query": "q"}
# Each kind's create, then one that would build on it (or simply come after it).
TWO_WORKFLOWS = {"workflows": [*WORKFLOWS["workflows"], {"name": "later", "configuration": {}}]}
CHART_THEN_DASHBOARD = {
    "charts": [{"name": "Revenue", "type": "line", "data_source": "ds_warehouse", "query": "q"}],
    "dashboards": [{"name": "Ops", "layout": [{"chart": "Revenue", "x": 0, "y": 0, "w": 6, "h": 4}]}],
}
DASHBOARD_THEN_WORKFLOW = {"dashboards": [{"name": "Ops", "layout": []}], **WORKFLOWS}


@pytest.mark.parametrize(
    ("chosen", "path", "document", "said"),
    [
        pytest.param(
            TWO_WORKFLOWS,
            "/v1/workflows",
            {**WORKFLOW_ANSWER, "name": "nightly-enrichment"},
            "it is named 'nightly-enrichment'",
            id="a workflow of another name",
        ),
        pytest.param(
            TWO_WORKFLOWS,
            "/v1/workflows",
            {**CHART_ANSWER, "name": "enrich-sales"},
            "no workflow 'configuration'",
            id="a chart for a workflow",
        ),
        pytest.param(
            CHART_THEN_DASHBOARD,
            "/v1/charts",
            {**WORKFLOW_ANSWER, "name": "Revenue"},
            "its type is None, not 'line'",
            id="a workflow for a chart",
        ),
        pytest.param(
            CHART_THEN_DASHBOARD,
            "/v1/charts",
            {**CHART_ANSWER, "data_source_id": "ds_crm"},
            "its data_source_id is 'ds_crm', not 'ds_warehouse'",
            id="a chart on another data source",
        ),
        pytest.param(
            CHART_THEN_DASHBOARD,
            "/v1/charts",
            {**CHART_ANSWER, "id": "ch 9"},
            "not a valid id",
            id="an id no request may carry",
        ),
        pytest.param(
            DASHBOARD_THEN_WORKFLOW,
            "/v1/dashboards",
            {"id": "db_9", "name": "Ops", "description": "", "tags": [], "layout": []},
            "no valid dashboard 'version'",
            id="a dashboard without a version",
        ),
    ],
)
def test_a_create_answered_with_another_object_fails_typed_and_sends_nothing_more(
    hook: AnalyticsHook,
    sandbox: SandboxServer,
    chosen: dict[str, Any],
    path: str,
    document: dict[str, Any],
    said: str,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    plan = plan_definitions(hook, chosen)
    before = len(sandbox.state.requests)
    body = json.dumps(document)
    headers = {"Content-Type": "application/json"}
    sandbox.state.inject(Fault.respond(201, headers=headers, body=body, method="POST", path=f"^{path}$"))

    with pytest.raises(UnexpectedResponseError, match="with another object") as raised:
        apply_plan(hook, plan, key_seed=SEED)

    assert said in str(raised.value)
    assert [(entry.method, entry.path) for entry in writes(sandbox, before)] == [("POST", path)]
    assert "Created " not in logged(capsys, caplog)


# A dashboard update keeps what the platform holds beyond the definitions' fields ---------------------------


def test_a_dashboard_update_keeps_the_layout_items_titles_and_settings(
    hook: AnalyticsHook, sandbox: SandboxServer
) -> None:
    with sandbox.state.lock:  # the platform's UI gave the seeded tiles a caption and display settings
        held = workspace(sandbox).dashboards["db_sales"].layout
        held[0].update(title="Revenue, 30 days", settings={"legend": "bottom", "colors": ["#123456"]})
        held[1].update(title="Orders", settings={"stacked": True})
        held[2].update(title="Top customers")
    layout = [  # the first two tiles swap places; a new chart takes the third one's
        {"chart": "ch_orders_by_region", "x": 0, "y": 0, "w": 6, "h": 4},
        {"chart": "ch_revenue", "x": 6, "y": 0, "w": 6, "h": 4},
        {"chart": "ch_active_users", "x": 0, "y": 4, "w": 6, "h": 4},
    ]
    board = {"name": "Sales", "description": "Nightly", "tags": ["finance", "sales"], "layout": layout}
    plan = plan_definitions(hook, {"dashboards": [board]})
    (change,) = [change for change in plan.changes if change.action == "update"]
    assert [field.field for field in change.fields] == ["description", "layout"]
    assert "title" not in json.dumps(plan.to_dict())  # not a change: not shown

    apply_plan(hook, plan, key_seed=SEED)

    (after,) = [item for item in sandbox.state.dashboards("ws_default") if item["id"] == "db_sales"]
    assert after["description"] == "Nightly"
    assert after["layout"] == [
        {
            "chart_id": "ch_orders_by_region",
            "x": 0,
            "y": 0,
            "w": 6,
            "h": 4,
            "title": "Orders",
            "settings": {"stacked": True},
        },
        {
            "chart_id": "ch_revenue",
            "x": 6,
            "y": 0,
            "w": 6,
            "h": 4,
            "title": "Revenue, 30 days",
            "settings": {"legend": "bottom", "colors": ["#123456"]},
        },
        {"chart_id": "ch_active_users", "x": 0, "y": 4, "w": 6, "h": 4},  # another chart: not the old tile's title
    ]


def test_a_description_only_update_sends_every_layout_field_the_platform_holds(
    hook: AnalyticsHook, sandbox: SandboxServer
) -> None:
    with sandbox.state.lock:
        for item in workspace(sandbox).dashboards["db_sales"].layout:
            item.update(title=f"tile {item['chart_id']}", settings={"refresh": 60})
        before_layout = [dict(item) for item in workspace(sandbox).dashboards["db_sales"].layout]
    layout = [{"chart": i["chart_id"], "x": i["x"], "y": i["y"], "w": i["w"], "h": i["h"]} for i in before_layout]
    board = {"name": "Sales", "description": "Nightly", "tags": ["finance", "sales"], "layout": layout}
    plan = plan_definitions(hook, {"dashboards": [board]})
    assert [field.field for change in plan.changes for field in change.fields] == ["description"]

    apply_plan(hook, plan, key_seed=SEED)

    (put,) = [entry for entry in writes(sandbox) if entry.method == "PUT"]
    assert put.json["layout"] == before_layout
    (after,) = [item for item in sandbox.state.dashboards("ws_default") if item["id"] == "db_sales"]
    assert (after["layout"], after["version"]) == (before_layout, 2)


def test_an_update_answered_about_another_dashboard_fails_typed(hook: AnalyticsHook, sandbox: SandboxServer) -> None:
    board = {"name": "Sales", "description": "Nightly", "tags": ["finance", "sales"], "layout": []}
    plan = plan_definitions(hook, {"dashboards": [board]})
    other = {"id": "db_product", "name": "Product usage", "description": "", "tags": [], "layout": [], "version": 2}
    body = json.dumps(other)
    headers = {"Content-Type": "application/json"}
    sandbox.state.inject(Fault.respond(200, headers=headers, body=body, method="PUT", path="^/v1/dashboards/db_sales$"))

    with pytest.raises(UnexpectedResponseError, match="update of dashboard 'Sales' with another object") as raised:
        apply_plan(hook, plan, key_seed=SEED)

    assert "it is db_product, not db_sales; it is named 'Product usage'" in str(raised.value)


def test_an_update_whose_answer_was_lost_is_recognised_with_the_kept_fields(
    hook: AnalyticsHook, sandbox: SandboxServer
) -> None:
    with sandbox.state.lock:
        workspace(sandbox).dashboards["db_sales"].layout[0].update(title="Revenue", settings={"legend": "bottom"})
        layout = [dict(item) for item in workspace(sandbox).dashboards["db_sales"].layout]
    places = [{"chart": i["chart_id"], "x": i["x"], "y": i["y"], "w": i["w"], "h": i["h"]} for i in layout]
    board = {"name": "Sales", "description": "Nightly", "tags": ["finance", "sales"], "layout": places}
    plan = plan_definitions(hook, {"dashboards": [board]})
    sandbox.state.inject(Fault.drop(method="PUT", path="^/v1/dashboards/db_sales$", after_processing=True))

    (written,) = apply_plan(hook, plan, key_seed=SEED).written  # the repeat's 412 is our own update

    assert [entry.status for entry in writes(sandbox) if entry.method == "PUT"][-1] == 412
    (after,) = [item for item in sandbox.state.dashboards("ws_default") if item["id"] == "db_sales"]
    assert (written.version, after["version"], after["layout"]) == (2, 2, layout)
