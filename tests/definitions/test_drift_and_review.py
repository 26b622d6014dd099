"""The two review modes of ``ApplyDefinitionsOperator``, against the sandbox: the drift check
(``plan_only=True, fail_on_changes=True``) and applying only the plan that was reviewed (``reviewed_plan``).

Each change after a review is made as a person or another tool would: in the definitions, or on the platform
through the API (the sandbox's UI has no editor).
"""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator
from airflow_provider_analytics.operators.errors import DefinitionsDrifted, FinalFailure, ReviewedPlanMoved
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.definitions.helpers import CREATES, PASSWORD, READS, definitions, sent, writes
from tests.support.context import make_context
from tests.support.task_log import task_log


def plan_task(**kwargs: Any) -> ApplyDefinitionsOperator:
    return ApplyDefinitionsOperator(task_id="plan", definitions=definitions(), plan_only=True, **kwargs)


def apply_task(reviewed: Any, document: dict[str, Any] | None = None) -> ApplyDefinitionsOperator:
    return ApplyDefinitionsOperator(
        task_id="apply", definitions=document or definitions(), reviewed_plan=reviewed, retries=3
    )


# --- the drift check ---------------------------------------------------------------------------------------------


def test_a_drift_check_fails_without_retries_with_the_plan_in_xcom(
    empty: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    context = make_context()
    with task_log(caplog) as lines, pytest.raises(DefinitionsDrifted) as raised:
        plan_task(fail_on_changes=True, retries=3).execute(context)
    assert "5 to create" in str(raised.value)
    plan = context["ti"].xcom["plan"]
    assert plan == raised.value.plan
    assert plan["counts"]["create"] == 5
    assert sent(empty) == READS  # the four listings, nothing written
    assert any("Definitions plan: 5 to create" in message for _, message in lines)  # the table is logged
    assert PASSWORD not in repr(plan)


def test_a_drift_check_stays_green_when_nothing_differs(empty: SandboxServer) -> None:
    ApplyDefinitionsOperator(task_id="apply", definitions=definitions()).execute(make_context())
    result = plan_task(fail_on_changes=True).execute(make_context())
    assert result["plan"]["writes"] is False
    assert result["plan"]["counts"]["unchanged"] == 5


def test_an_object_edited_on_the_platform_is_drift_even_when_the_api_cannot_update_it(empty: SandboxServer) -> None:
    ApplyDefinitionsOperator(task_id="apply", definitions=definitions()).execute(make_context())
    changed = definitions()
    changed["charts"][1]["query"] = "select region, orders, returns"  # the chart on the platform now differs
    operator = ApplyDefinitionsOperator(task_id="plan", definitions=changed, plan_only=True, fail_on_changes=True)
    with pytest.raises(DefinitionsDrifted, match="1 cannot apply"):
        operator.execute(make_context())


def test_fail_on_changes_without_plan_only_is_refused_before_any_request(empty: SandboxServer) -> None:
    operator = ApplyDefinitionsOperator(task_id="apply", definitions=definitions(), fail_on_changes=True)
    with pytest.raises(FinalFailure, match="fail_on_changes=True needs plan_only=True"):
        operator.execute(make_context())
    assert sent(empty) == []


def test_every_object_no_definition_names_is_listed_on_request(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    with task_log(caplog) as lines:
        result = plan_task(list_not_managed=True).execute(make_context())
    unmanaged = [change for change in result["plan"]["changes"] if change["action"] == "not_managed"]
    assert unmanaged  # the seeded workspace
    listed = "\n".join(message for _, message in lines if message.startswith("Not managed by these definitions"))
    for change in unmanaged:
        assert f"({change['id']})" in listed
    with task_log(caplog) as quiet:
        plan_task().execute(make_context())
    assert not [message for _, message in quiet if message.startswith("Not managed")]


# --- applying the reviewed plan -----------------------------------------------------------------------------------


def test_the_reviewed_plan_is_applied_when_nothing_moved(empty: SandboxServer) -> None:
    reviewed = plan_task().execute(make_context())  # the whole return value, as plan_task.output gives it
    before = len(empty.state.requests)
    result = apply_task(reviewed).execute(make_context())
    assert [(entry.method, entry.path) for entry in writes(empty, before)] == CREATES
    assert len(result["applied"]["written"]) == 5
    # The plan's dict alone is accepted too.
    again = plan_task().execute(make_context())
    assert apply_task(again["plan"]).execute(make_context())["applied"]["written"] == []


def test_a_definition_edited_after_the_review_is_not_applied(empty: SandboxServer) -> None:
    reviewed = plan_task().execute(make_context())
    edited = definitions()
    edited["charts"][0]["query"] = "select day, revenue, cost from sales"  # a create of other content
    before = len(empty.state.requests)
    with pytest.raises(ReviewedPlanMoved) as raised:
        apply_task(reviewed, edited).execute(make_context())
    assert raised.value.moved == [
        f"chart 'Revenue': reviewed as create (content {digest(reviewed, 'Revenue')[:12]}), now create "
        f"(content {digest(plan_task_of(edited), 'Revenue')[:12]})"
    ]
    assert writes(empty, before) == []


def test_an_object_created_on_the_platform_after_the_review_moves_the_plan(empty: SandboxServer) -> None:
    reviewed = plan_task().execute(make_context())
    with AnalyticsHook() as hook:  # someone else creates the workflow meanwhile
        made = hook.create_workflow("enrich-sales", {"steps": [{"name": "extract"}]})
    before = len(empty.state.requests)
    with pytest.raises(ReviewedPlanMoved) as raised:
        apply_task(reviewed).execute(make_context())
    short = digest(reviewed, "enrich-sales")[:12]
    assert raised.value.moved == [f"workflow 'enrich-sales': reviewed as create (content {short}), now nothing to do"]
    assert made["id"]
    assert writes(empty, before) == []


def test_a_dashboard_edited_on_the_platform_after_the_review_moves_the_plan(empty: SandboxServer) -> None:
    ApplyDefinitionsOperator(task_id="apply", definitions=definitions()).execute(make_context())
    changed = definitions()
    changed["dashboards"][0]["description"] = "Daily sales, by region"
    reviewed = ApplyDefinitionsOperator(task_id="plan", definitions=changed, plan_only=True).execute(make_context())
    [row] = [change for change in reviewed["plan"]["changes"] if change["action"] == "update"]
    with AnalyticsHook() as hook:  # an edit in the UI: same fields asked for, a new version
        hook.update_dashboard(row["id"], "Sales", description="Daily sales", tags=["finance", "daily", "ui"])
    before = len(empty.state.requests)
    with pytest.raises(ReviewedPlanMoved) as raised:
        apply_task(reviewed, changed).execute(make_context())
    [line] = raised.value.moved
    assert line.startswith(f"dashboard 'Sales': reviewed as update of {row['id']} at version {row['version']} (")
    assert f"at version {row['version'] + 1}" in line
    assert writes(empty, before) == []


@pytest.mark.parametrize(
    ("reviewed", "message"),
    [
        ("{'plan': {...}}", "reviewed_plan must be a mapping \\(dict\\), got str: a template renders"),
        ({"summary": "no changes key"}, "reviewed_plan must be a plan"),
        ({"plan": {"changes": "create everything"}}, "reviewed_plan must be a plan"),
        ({"changes": [["chart", "Revenue", "create"]]}, r"changes\[0\] is a list, not a mapping"),
        ({"changes": [{"kind": "chart", "name": "Revenue", "action": "delete"}]}, "has the action 'delete'"),
        ({"changes": [{"kind": "chart", "name": 7, "action": "create"}]}, "has no name string"),
        ({"changes": [{}] * 200_001}, "lists 200001 objects, more than the 200000"),
    ],
    ids=[
        "a-string",
        "no-changes",
        "changes-not-a-list",
        "row-not-a-mapping",
        "unknown-action",
        "name-not-text",
        "too-many",
    ],
)
def test_a_reviewed_plan_that_is_no_plan_is_refused_before_any_write(
    empty: SandboxServer, reviewed: Any, message: str
) -> None:
    with pytest.raises(FinalFailure, match=message):
        apply_task(reviewed).execute(make_context())
    assert writes(empty) == []


def test_a_reviewed_plan_is_for_the_apply_task_only(empty: SandboxServer) -> None:
    with pytest.raises(FinalFailure, match="reviewed_plan is for the apply task"):
        plan_task(reviewed_plan={"changes": []}).execute(make_context())
    assert sent(empty) == []


def digest(result: dict[str, Any], name: str) -> str:
    [row] = [change for change in result["plan"]["changes"] if change["name"] == name]
    return str(row["digest"])


def plan_task_of(document: dict[str, Any]) -> dict[str, Any]:
    operator = ApplyDefinitionsOperator(task_id="plan", definitions=document, plan_only=True)
    result: dict[str, Any] = operator.execute(make_context())
    return result
