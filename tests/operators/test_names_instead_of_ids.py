"""Names instead of ids (issue 27): ``workflow_name``, ``dashboard_names``, ``data_source_name``.

Against the sandbox over real sockets: one listing per try, logged with the id it resolved to; a name that
matches no object or several fails before any write, saying what it found; a deferred task resumes on the ids
in its event, without looking the name up again.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import TaskDeferred

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.reports import GenerateReportOperator
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor
from airflow_provider_analytics.wire._names import ids_for_names, resolve_name
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.support.context import SLOW, make_context, retry_context
from tests.support.names import DATA_SOURCE, POLL, WORKFLOW
from tests.support.task_log import task_log
from tests.support.triggers import triggerer_event

WORKFLOW_NAME = "nightly-enrichment"  # WORKFLOW's name in the seed
PAST_THE_END = 1300.0


def sent(sandbox: SandboxServer, since: int = 0) -> list[tuple[str, str]]:
    return [(r.method, r.path.split("?")[0]) for r in sandbox.state.requests[since:]]


def writes(sandbox: SandboxServer) -> list[tuple[str, str]]:
    return [(method, path) for method, path in sent(sandbox) if method != "GET"]


def resolved_lines(lines: list[tuple[str, str]], kind: str) -> list[str]:
    return [message for level, message in lines if level == "info" and message.startswith(f"Resolved {kind}=")]


# --- the pure lookup -------------------------------------------------------------------------------------


def test_resolve_name_is_exact_and_lists_the_closest_names_first() -> None:
    objects = [{"id": f"wf_{n}", "name": f"job-{n}"} for n in range(15)] + [{"id": "wf_x", "name": "Nightly"}]
    assert resolve_name("workflow", objects, "Nightly") == "wf_x"
    with pytest.raises(AnalyticsInputError) as missing:
        resolve_name("workflow", objects, "nightly")  # case-sensitive
    message = str(missing.value)
    assert message.startswith("no workflow is named 'nightly'; workflows that exist, closest first: 'Nightly'")
    assert "and 6 more" in message  # at most ten names are listed
    with pytest.raises(AnalyticsInputError, match="there is no dashboard at all"):
        resolve_name("dashboard", [], "Sales")


def test_every_unresolved_name_is_reported_at_once() -> None:
    objects = [{"id": "db_1", "name": "Sales"}, {"id": "db_2", "name": "Sales"}, {"id": "db_3", "name": "Ops"}]
    assert ids_for_names("dashboard", objects, ["Ops"]) == ["db_3"]
    with pytest.raises(AnalyticsInputError) as problems:
        ids_for_names("dashboard", objects, ["Sales", "Nope", "Ops"])
    assert "2 dashboards are named 'Sales' (ids db_1, db_2)" in str(problems.value)
    assert "no dashboard is named 'Nope'" in str(problems.value)


# --- exactly one of id and name, at construction --------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "names"),
    [
        (lambda **kw: ExecuteWorkflowOperator(task_id="t", **kw), ("workflow_id", "workflow_name")),
        (lambda **kw: GenerateReportOperator(task_id="t", **kw), ("dashboard_ids", "dashboard_names")),
        (lambda **kw: DataSourceSyncedSensor(task_id="t", **kw), ("data_source_id", "data_source_name")),
    ],
    ids=["workflow", "report", "sensor"],
)
def test_exactly_one_of_id_and_name(build: Any, names: tuple[str, str]) -> None:
    id_param, name_param = names
    for kwargs, given in (({}, "neither"), ({id_param: "x_1", name_param: "x"}, "both")):
        with pytest.raises(AnalyticsInputError) as refused:
            build(**kwargs)
        assert str(refused.value) == f"give exactly one of {id_param} and {name_param}, got {given}"


def test_names_are_templated_like_the_ids() -> None:
    assert "workflow_name" in ExecuteWorkflowOperator.template_fields
    assert "dashboard_names" in GenerateReportOperator.template_fields
    assert "data_source_name" in DataSourceSyncedSensor.template_fields


# --- ExecuteWorkflowOperator(workflow_name=...) ----------------------------------------------------------


def test_workflow_by_name_lists_once_logs_and_starts_that_workflow(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    operator = ExecuteWorkflowOperator(task_id="task", workflow_name=WORKFLOW_NAME, wait_for_completion=False)
    with task_log(caplog) as lines:
        result = operator.execute(make_context())
    assert result["workflow_id"] == WORKFLOW
    requests = sent(sandbox)
    listings = [r for r in requests if r == ("GET", "/v1/workflows")]
    assert len(listings) >= 1  # one listing, paged (the seed has more workflows than a page may hold)
    assert requests[len(listings) :] == [("POST", f"/v1/workflows/{WORKFLOW}/execute")]
    assert resolved_lines(lines, "workflow_name") == [
        f"Resolved workflow_name='{WORKFLOW_NAME}' to workflow_id='{WORKFLOW}'"
    ]


def test_workflow_name_that_matches_none_fails_before_any_write(sandbox: SandboxServer) -> None:
    operator = ExecuteWorkflowOperator(task_id="task", workflow_name="nightly-enrichmnet")
    with pytest.raises(Exception, match="no workflow is named 'nightly-enrichmnet'") as failed:
        operator.execute(make_context())
    assert "closest first: 'nightly-enrichment'" in str(failed.value)
    assert writes(sandbox) == []


def test_workflow_name_that_matches_several_fails_listing_their_ids(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    twin = hook.create_workflow(WORKFLOW_NAME, {"steps": []})["id"]
    before = len(sandbox.state.requests)
    operator = ExecuteWorkflowOperator(task_id="task", workflow_name=WORKFLOW_NAME)
    with pytest.raises(Exception, match=f"2 workflows are named '{WORKFLOW_NAME}'") as failed:
        operator.execute(make_context())
    assert WORKFLOW in str(failed.value)
    assert twin in str(failed.value)
    assert [r for r in sent(sandbox, before) if r[0] != "GET"] == []


def test_a_deferred_workflow_by_name_resumes_without_a_second_listing(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    sandbox.state.set_timings(SLOW)
    context = make_context()
    with pytest.raises(TaskDeferred) as deferred:
        ExecuteWorkflowOperator(
            task_id="task", workflow_name=WORKFLOW_NAME, deferrable=True, poll_interval=POLL
        ).execute(context)
    assert deferred.value.trigger.serialize()[1]["workflow_id"] == WORKFLOW
    sandbox.state.advance(PAST_THE_END)
    event = triggerer_event(deferred.value.trigger)
    since = len(sandbox.state.requests)
    resumed = ExecuteWorkflowOperator(task_id="task", workflow_name=WORKFLOW_NAME)  # rebuilt, as on a resume
    caplog.clear()  # Airflow 2.11 logs through logging: the deferring try's lines are in caplog already
    with task_log(caplog) as lines:
        result = resumed.execute_complete(context, event)
    assert result["status"] == "succeeded"
    assert sent(sandbox, since) == []  # no listing, no read: the event names the workflow
    assert resumed.workflow_id == WORKFLOW
    assert resolved_lines(lines, "workflow_name") == []


def test_each_try_looks_the_name_up_again(sandbox: SandboxServer) -> None:
    for try_number in (1, 2):
        operator = ExecuteWorkflowOperator(task_id="task", workflow_name=WORKFLOW_NAME, wait_for_completion=False)
        before = len(sandbox.state.requests)
        operator.execute(retry_context(try_number))
        assert ("GET", "/v1/workflows") in sent(sandbox, before)


# --- GenerateReportOperator(dashboard_names=[...]) -------------------------------------------------------


def test_report_by_names_lists_once_and_generates_from_those_dashboards(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    operator = GenerateReportOperator(
        task_id="task", dashboard_names=["Sales", "Product usage"], format="csv", wait_for_completion=False
    )
    with task_log(caplog) as lines:
        result = operator.execute(make_context())
    assert result["dashboard_ids"] == ["db_sales", "db_product"]
    assert sent(sandbox) == [("GET", "/v1/dashboards"), ("POST", "/v1/reports")]
    assert resolved_lines(lines, "dashboard_names") == [
        "Resolved dashboard_names=['Sales', 'Product usage'] to dashboard_ids=['db_sales', 'db_product']"
    ]


def test_report_names_that_match_none_or_several_fail_at_once_before_any_write(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    twin = hook.create_dashboard("Sales")["id"]
    before = len(sandbox.state.requests)
    operator = GenerateReportOperator(task_id="task", dashboard_names=["Sales", "Marketting", "Product usage"])
    with pytest.raises(Exception, match="2 dashboards are named 'Sales'") as failed:
        operator.execute(make_context())
    message = str(failed.value)
    assert "db_sales" in message
    assert twin in message
    assert "no dashboard is named 'Marketting'; dashboards that exist, closest first: 'Marketing'" in message
    assert sent(sandbox, before) == [("GET", "/v1/dashboards")]


# --- DataSourceSyncedSensor(data_source_name=...) --------------------------------------------------------


def test_sensor_by_name_looks_up_once_per_try_in_poke_mode(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    long_ago = sandbox.state.now() - timedelta(days=30)
    sensor = DataSourceSyncedSensor(task_id="fresh", data_source_name="warehouse", synced_after=long_ago)
    with task_log(caplog) as lines:
        assert sensor.execute(make_context())["status"] == "synced"
        try:
            sensor.poke(make_context())  # a later poke of the same try does not look the name up again
        finally:
            sensor.hook.close()  # a poke outside execute has no task step to close the hook it built
    assert sent(sandbox) == [
        ("GET", "/v1/data-sources"),
        ("GET", f"/v1/data-sources/{DATA_SOURCE}/sync"),
        ("GET", f"/v1/data-sources/{DATA_SOURCE}/sync"),
    ]
    assert resolved_lines(lines, "data_source_name") == [
        f"Resolved data_source_name='warehouse' to data_source_id='{DATA_SOURCE}'"
    ]


def test_deferred_sensor_by_name_defers_on_the_id_and_resumes_without_a_listing(sandbox: SandboxServer) -> None:
    interval_end = sandbox.state.now()
    sensor = DataSourceSyncedSensor(
        task_id="fresh", data_source_name="warehouse", deferrable=True, poke_interval=5, timeout=600
    )
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(make_context(data_interval_end=interval_end))
    assert deferred.value.trigger.serialize()[1]["data_source_id"] == DATA_SOURCE
    assert sent(sandbox) == [("GET", "/v1/data-sources"), ("GET", f"/v1/data-sources/{DATA_SOURCE}/sync")]
    event = {
        "status": "success",
        "kind": "sync",
        "target": deferred.value.trigger.serialize()[1] | {},
        "resource": {"status": "synced", "data_source_id": DATA_SOURCE},
        "message": "m",
    }
    event["target"] = {key: event["target"][key] for key in ("data_source_id", "synced_after", "fail_on_sync_failure")}
    since = len(sandbox.state.requests)
    resumed = DataSourceSyncedSensor(task_id="fresh", data_source_name="warehouse")
    assert resumed.execute_complete(make_context(data_interval_end=interval_end), event)["status"] == "synced"
    assert sent(sandbox, since) == []
    assert resumed.data_source_id == DATA_SOURCE


def test_sensor_name_that_matches_none_or_several_fails(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    # The run's time first: the threshold is input, checked before the lookup's request.
    context = make_context(data_interval_end=sandbox.state.now())
    with pytest.raises(Exception, match=r"no data source is named 'wearhouse'.*closest first: 'warehouse'"):
        DataSourceSyncedSensor(task_id="t", data_source_name="wearhouse").execute(context)
    twin = hook.connect_data_source("warehouse", "postgres", {"host": "db", "database": "x", "user": "u"})["id"]
    with pytest.raises(Exception, match="2 data sources are named 'warehouse'") as failed:
        DataSourceSyncedSensor(task_id="t", data_source_name="warehouse").execute(context)
    assert DATA_SOURCE in str(failed.value)
    assert twin in str(failed.value)
    assert [(m, p) for m, p in writes(sandbox) if p != "/v1/data-sources"] == []  # only the twin's creation
