"""A conditional dashboard update that is repeated (its answer lost, or the task retried) is not a conflict.

Found by ``make soak``: the platform applied a ``PUT`` with ``If-Match: "1"``, the connection was reset before
the answer, the client sent it again and got 412 (the dashboard was at version 2, by that very update); every
retry of the task then failed the same way.
"""

from __future__ import annotations

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._conditional import expected_version, holds_update
from airflow_provider_analytics.wire.errors import PreconditionFailedError


def a_dashboard(hook: AnalyticsHook) -> tuple[str, str]:
    chart_id = next(iter(hook.list_charts()))["id"]
    dashboard = hook.create_dashboard("Sales", layout=[{"chart_id": chart_id, "x": 0, "y": 0, "w": 6, "h": 4}])
    assert dashboard["version"] == 1
    return dashboard["id"], chart_id


def test_an_update_whose_answer_was_lost_is_applied_once_and_returned(
    hook: AnalyticsHook, sandbox: SandboxServer
) -> None:
    dashboard_id, chart_id = a_dashboard(hook)
    sandbox.state.inject(Fault.drop(method="PUT", path="/v1/dashboards/", after_processing=True))
    before = len(sandbox.state.requests)

    layout = [{"chart_id": chart_id}]  # the platform fills in x, y, w and h
    updated = hook.update_dashboard(dashboard_id, "Sales v2", tags=["finance"], layout=layout, if_match=1)  # type: ignore[arg-type]

    assert (updated["version"], updated["name"], updated["tags"]) == (2, "Sales v2", ["finance"])
    assert updated["layout"][0]["w"] == 6  # the platform's default: not sent, not compared
    assert [(r.method, r.status) for r in sandbox.state.requests[before:]] == [
        ("PUT", 0),
        ("PUT", 412),
        ("GET", 200),
    ]  # 0: answer dropped


def test_a_retried_task_sending_the_same_update_again_succeeds_without_a_new_version(hook: AnalyticsHook) -> None:
    dashboard_id, _ = a_dashboard(hook)
    first = hook.update_dashboard(dashboard_id, "Sales v2", description="nightly", if_match=1)

    again = hook.update_dashboard(dashboard_id, "Sales v2", description="nightly", if_match=1)

    assert again["version"] == first["version"] == 2


def test_another_writers_change_stays_a_conflict(hook: AnalyticsHook) -> None:
    dashboard_id, _ = a_dashboard(hook)
    hook.update_dashboard(dashboard_id, "Someone else's title", if_match=1)

    with pytest.raises(PreconditionFailedError, match="at version 2"):
        hook.update_dashboard(dashboard_id, "Sales v2", if_match=1)


def test_the_same_update_two_versions_on_stays_a_conflict(hook: AnalyticsHook) -> None:
    dashboard_id, _ = a_dashboard(hook)
    hook.update_dashboard(dashboard_id, "Sales v2", if_match=1)
    hook.update_dashboard(dashboard_id, "Sales v2", if_match=2)  # version 3, with the same contents

    with pytest.raises(PreconditionFailedError):
        hook.update_dashboard(dashboard_id, "Sales v2", if_match=1)


@pytest.mark.parametrize(
    ("resource", "held"),
    [
        ({"version": 4, "name": "n", "description": "", "tags": [], "layout": []}, True),
        ({"version": 5, "name": "n", "description": "", "tags": [], "layout": []}, False),
        ({"version": 4, "name": "other", "description": "", "tags": [], "layout": []}, False),
        ({"version": 4, "name": "n", "description": "", "tags": ["x"], "layout": []}, False),
        ({"version": True, "name": "n", "description": "", "tags": [], "layout": []}, False),
        ({"version": 4, "name": "n", "tags": [], "layout": []}, False),
    ],
)
def test_holds_update_judges_version_and_contents(resource: dict[str, object], held: bool) -> None:
    update = endpoints.update_dashboard("db_1", "n", if_match=3).spec

    assert expected_version(update) == 3
    assert holds_update(resource, update) is held


def test_an_unconditional_update_is_never_judged_held() -> None:
    update = endpoints.update_dashboard("db_1", "n").spec

    assert expected_version(update) is None
    assert not holds_update({"version": 1, "name": "n", "description": "", "tags": [], "layout": []}, update)
