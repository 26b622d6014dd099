"""Exporting the platform's objects as definitions, against the sandbox: the round trip is the test (export, then
plan against the same workspace: nothing to change), on the seeded workspace, on one of hundreds of objects and
pages, and on one whose names are not unique. Secrets never reach a file, a log line or XCom."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.definitions._export_files import definition_files
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator, ExportDefinitionsOperator
from airflow_provider_analytics.operators.errors import FinalFailure
from airflow_provider_analytics.sandbox.domain.records import ChartRecord, DashboardRecord, WorkflowRecord
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.definitions.helpers import PASSWORD, READS, add_workflows, definitions, logged, sent, workspace, writes
from tests.support.airflow_runs import broken_in_airflow
from tests.support.context import make_context


def unchanged_plan(hook: AnalyticsHook, document: Any) -> dict[str, int]:
    """The counts of planning ``document``, which must change nothing."""
    counts = hook.plan_definitions(document).counts
    assert (counts["create"], counts["update"], counts["cannot_apply"]) == (0, 0, 0), counts
    return counts


def add_chart(sandbox: SandboxServer, ident: str, name: str, source_id: str, **options: Any) -> None:
    with sandbox.state.lock:
        now = sandbox.state.now()
        workspace(sandbox).charts[ident] = ChartRecord(
            ident, name, "bar", source_id, f"select {ident}", options, now, now
        )


def add_dashboard(sandbox: SandboxServer, ident: str, name: str, layout: list[dict[str, Any]]) -> None:
    with sandbox.state.lock:
        now = sandbox.state.now()
        record = DashboardRecord(ident, name, "", [], layout, 1, now, now)
        workspace(sandbox).dashboards[ident] = record


def test_an_export_of_the_seeded_workspace_plans_as_unchanged_after_four_listings(
    hook: AnalyticsHook, sandbox: SandboxServer
) -> None:
    exported = hook.export_definitions()
    assert sent(sandbox) == READS
    assert list(exported) == ["data_sources", "charts", "dashboards", "workflows"]
    assert all(exported[section] for section in exported)  # the seed has objects of every kind
    for section, entries in exported.items():
        names = [entry["name"] for entry in entries]
        assert names == sorted(names), section
    chart = exported["charts"][0]
    assert list(chart) == ["name", "type", "data_source", "query", "options"]
    names_of_sources = {source["name"] for source in exported["data_sources"]}
    assert {chart["data_source"] for chart in exported["charts"]} <= names_of_sources  # by name, not by id
    layout_charts = {item["chart"] for board in exported["dashboards"] for item in board["layout"]}
    assert layout_charts <= {chart["name"] for chart in exported["charts"]}
    for board in exported["dashboards"]:
        assert not {"id", "version", "created_at", "updated_at"} & set(board)
    counts = unchanged_plan(hook, exported)
    assert counts["not_managed"] == 0


def test_a_secret_connection_field_is_exported_as_a_reference_never_as_a_value(
    hook: AnalyticsHook,
    empty: SandboxServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    document = definitions()
    document["workflows"][0]["configuration"]["api_token"] = PASSWORD  # returned by the platform as it was sent
    hook.apply_plan(hook.plan_definitions(document))
    context = make_context()
    result = ExportDefinitionsOperator(task_id="export", destination=f"{tmp_path}/").execute(context)
    texts = {Path(path).name: Path(path).read_text() for path in result["files"]}
    assert sorted(texts) == ["charts.yaml", "dashboards.yaml", "data_sources.yaml", "workflows.yaml"]
    assert "field: password" in texts["data_sources.yaml"]
    assert "from_connection: analytics_warehouse_v2" in texts["data_sources.yaml"]
    out = logged(capsys, caplog)
    assert "1 object(s) hold secrets in their options or configuration, exported as references" in out
    assert "configuration.api_token from 'analytics_enrich_sales_configuration_api_token'" in out
    assert "from_variable: analytics_enrich_sales_configuration_api_token" in texts["workflows.yaml"]
    assert "1 data source(s) have secret connection fields, exported as references" in out
    assert "password from 'analytics_warehouse_v2'" in out
    for text in [*texts.values(), out, repr(result), repr(context["ti"].xcom)]:
        assert PASSWORD not in text
    # Every object plans as unchanged: a reference is not compared (a plan never reads Airflow's secrets).
    plan = hook.plan_definitions(str(tmp_path / "*.yaml"))
    assert {c.action for c in plan.changes} == {"unchanged"}
    workflow = next(c for c in plan.changes if c.kind == "workflow")
    assert workflow.detail.endswith("not compared: configuration.api_token")


def test_a_secret_of_a_workflow_s_configuration_is_read_from_airflow_when_created(
    hook: AnalyticsHook,
    empty: SandboxServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    token = f"tok-{uuid.uuid4().hex}"
    monkeypatch.setenv("AIRFLOW_VAR_ANALYTICS_ENRICH_TOKEN", token)
    document = {
        "workflows": [
            {
                "name": "enrich",
                "configuration": {"steps": [{"auth": {"api_token": {"from_variable": "analytics_enrich_token"}}}]},
            }
        ],
        "charts": [],
    }
    context = make_context()
    result = ApplyDefinitionsOperator(task_id="apply", definitions=document).execute(context)
    [record] = workspace(empty).workflows.values()
    assert record.configuration == {"steps": [{"auth": {"api_token": token}}]}  # sent as read, where it was
    assert result["applied"]["counts"]["create"] == 1
    for text in [logged(capsys, caplog), repr(result), repr(context["ti"].xcom)]:
        assert token not in text
    again = hook.plan_definitions(document)  # not compared: no difference, and nothing read
    assert [c.action for c in again.changes if c.kind == "workflow"] == ["unchanged"]


@broken_in_airflow(
    "3.0",
    "Airflow 3.0's Variable.get outside a task's process (the operator run directly, as here) raises ImportError "
    "for a variable no secrets backend holds instead of returning the default; a task asks its supervisor",
)
def test_a_missing_variable_deep_in_a_configuration_fails_before_any_write(empty: SandboxServer) -> None:
    configuration = {"steps": [{"auth": {"api_token": {"from_variable": "analytics_enrich_token_nowhere"}}}]}
    document = {"workflows": [{"name": "enrich", "configuration": configuration}]}
    with pytest.raises(
        FinalFailure, match=r"configuration\.steps\[0\]\.auth\.api_token: .*analytics_enrich_token_nowhere"
    ):
        ApplyDefinitionsOperator(task_id="apply", definitions=document).execute(make_context())
    assert writes(empty) == []


def test_names_the_platform_shares_are_exported_with_their_ids_and_plan_unchanged(
    hook: AnalyticsHook, empty: SandboxServer, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    hook.apply_plan(hook.plan_definitions(definitions()))
    source_id = next(iter(workspace(empty).data_sources))
    add_chart(empty, "ch_twin_a", "Twin", source_id)
    add_chart(empty, "ch_twin_b", "Twin", source_id, stacked=True)
    add_dashboard(
        empty, "db_twins", "Twins", [{"chart_id": f"ch_twin_{x}", "x": 0, "y": 0, "w": 1, "h": 1} for x in "ab"]
    )
    exported = hook.export_definitions()
    twins = [chart for chart in exported["charts"] if chart["name"] == "Twin"]
    assert [chart["id"] for chart in twins] == ["ch_twin_a", "ch_twin_b"]
    assert [chart for chart in exported["charts"] if chart["name"] != "Twin" and "id" in chart] == []
    board = next(board for board in exported["dashboards"] if board["name"] == "Twins")
    assert [item["chart"] for item in board["layout"]] == ["ch_twin_a", "ch_twin_b"]  # a shared name is no reference
    assert "2 charts on the platform are named 'Twin': each is exported with its id" in logged(capsys, caplog)
    before = len(empty.state.requests)
    unchanged_plan(hook, exported)
    ApplyDefinitionsOperator(task_id="apply", definitions=exported).execute(make_context())
    assert writes(empty, before) == []


def test_an_export_of_hundreds_of_objects_and_pages_plans_as_unchanged(
    hook: AnalyticsHook, empty: SandboxServer, tmp_path: Path
) -> None:
    hook.apply_plan(hook.plan_definitions(definitions()))
    add_workflows(empty, 450)  # several pages of workflows
    charts = [f"ch_bulk_{number}" for number in range(120)]
    source_id = next(iter(workspace(empty).data_sources))
    for number, ident in enumerate(charts):
        add_chart(empty, ident, f"bulk chart {number}", source_id, rank=number)
    for number in range(260):  # several pages of dashboards
        layout = [
            {"chart_id": charts[(number + i) % 120], "x": i, "y": 0, "w": 1, "h": 1, "title": "t"} for i in range(3)
        ]
        add_dashboard(empty, f"db_bulk_{number}", f"bulk board {number}", layout)
    before = len(empty.state.requests)
    result = ExportDefinitionsOperator(task_id="export", destination=f"{tmp_path}/", split_by="object").execute(
        make_context()
    )
    listed = sent(empty, before)
    assert set(listed) == set(READS)  # listings only, every page followed
    assert len(listed) > 4
    assert result["counts"] == {"data_sources": 1, "charts": 122, "dashboards": 261, "workflows": 451}
    written = sorted(tmp_path.glob("*/*.yaml"))
    assert result["files_written"] == len(written) == 1 + 122 + 261 + 451
    # XCom names the first twenty files only, in the order written (the data source's first): the folder lists all.
    assert len(result["files"]) == 20
    assert result["files"][0] == str(tmp_path / "data_sources" / "warehouse-v2.yaml")
    assert set(result["files"]) <= {str(path) for path in written}
    assert (result["stale"], result["pinned"], result["stale_found"], result["pinned_found"]) == ([], [], 0, 0)
    unchanged_plan(hook, str(tmp_path / "*" / "*.yaml"))
    again = ExportDefinitionsOperator(task_id="export", destination=f"{tmp_path}/", split_by="object")
    texts = {path: path.read_bytes() for path in written}
    repeated = again.execute(make_context())
    assert (repeated["files"], repeated["files_written"]) == (result["files"], result["files_written"])
    assert {path: path.read_bytes() for path in sorted(tmp_path.glob("*/*.yaml"))} == texts  # the same bytes


def test_names_whose_files_would_collide_get_one_file_each(
    hook: AnalyticsHook, empty: SandboxServer, tmp_path: Path
) -> None:
    hook.apply_plan(hook.plan_definitions(definitions()))
    source_id = next(iter(workspace(empty).data_sources))
    for ident, name in (("x1", "a"), ("x2", "a"), ("x3", "a x1"), ("x4", "A-X1")):
        add_chart(empty, ident, name, source_id)
    operator = ExportDefinitionsOperator(
        task_id="export", destination=f"{tmp_path}/", split_by="object", kinds=["charts"]
    )
    result = operator.execute(make_context())
    names = sorted(Path(path).name for path in result["files"])
    assert len(names) == len(set(names)) == result["files_written"] == 6  # Revenue, Orders and the four
    assert {"a-x1.yaml", "a-x2.yaml"} <= set(names)
    assert hook.plan_definitions(str(tmp_path / "charts" / "*.yaml")).counts["unchanged"] == 6


def test_a_chosen_subset_names_what_it_does_not_export_by_name(hook: AnalyticsHook, empty: SandboxServer) -> None:
    hook.apply_plan(hook.plan_definitions(definitions()))
    exported = hook.export_definitions(kinds=["charts", "dashboards"], names=["Revenue", "Sales"])
    assert list(exported) == ["charts", "dashboards"]
    assert [chart["name"] for chart in exported["charts"]] == ["Revenue"]
    assert exported["charts"][0]["data_source"] == "warehouse-v2"
    assert [item["chart"] for item in exported["dashboards"][0]["layout"]] == ["Revenue", "Orders"]
    counts = unchanged_plan(hook, exported)
    assert counts["unchanged"] == 2


def test_an_object_removed_since_an_earlier_export_is_reported_as_a_stale_file(
    hook: AnalyticsHook, empty: SandboxServer, tmp_path: Path
) -> None:
    hook.apply_plan(hook.plan_definitions(definitions()))
    export = ExportDefinitionsOperator(task_id="export", destination=f"{tmp_path}/", split_by="object")
    first = export.execute(make_context())
    with empty.state.lock:
        workspace(empty).workflows.clear()
    second = export.execute(make_context())
    assert second["stale"] == [str(tmp_path / "workflows" / "enrich-sales.yaml")]
    assert second["stale_found"] == 1
    assert set(first["files"]) - set(second["files"]) == set(second["stale"])


def test_a_folder_of_many_stale_files_names_twenty_and_counts_them_all(
    hook: AnalyticsHook, empty: SandboxServer, tmp_path: Path
) -> None:
    (tmp_path / "workflows").mkdir()
    earlier = [{"name": f"old-{number:02}", "description": "", "configuration": {}} for number in range(35)]
    for file in definition_files({"workflows": earlier}, "object"):  # renamed since an earlier export
        (tmp_path / file.path).write_bytes(file.data)
    export = ExportDefinitionsOperator(task_id="export", destination=f"{tmp_path}/", split_by="object")

    result = export.execute(make_context())

    assert result["stale_found"] == 35
    assert result["stale"] == [str(tmp_path / "workflows" / f"old-{number:02}.yaml") for number in range(20)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kinds": ["chart"]}, "kinds must be a list of section names"),
        ({"kinds": "reports"}, "kinds must be a list of section names"),
        ({"names": []}, "names must be a non-empty list of object names"),
        ({"names": [3]}, "names must be a non-empty list of object names"),
        ({"split_by": "file"}, "split_by must be one of 'kind', 'object'"),
    ],
)
def test_bad_arguments_are_refused_before_any_request(
    sandbox: SandboxServer, tmp_path: Path, kwargs: dict[str, Any], message: str
) -> None:
    operator = ExportDefinitionsOperator(task_id="export", destination=f"{tmp_path}/out/", **kwargs)
    with pytest.raises(FinalFailure, match=message):
        operator.execute(make_context())
    assert sent(sandbox) == []
    assert not (tmp_path / "out").exists()


def test_a_destination_that_is_a_file_is_refused_before_any_request(sandbox: SandboxServer, tmp_path: Path) -> None:
    (tmp_path / "defs.yaml").write_text("")
    operator = ExportDefinitionsOperator(task_id="export", destination=str(tmp_path / "defs.yaml"))
    with pytest.raises(FinalFailure, match="must be a folder: end it with '/'"):
        operator.execute(make_context())
    assert sent(sandbox) == []


def test_a_name_no_object_has_fails_naming_it(hook: AnalyticsHook, sandbox: SandboxServer) -> None:
    with pytest.raises(AnalyticsInputError, match=r"no charts on the platform named 'Revenu'"):
        hook.export_definitions(kinds=["charts"], names=["Revenu"])
    assert sent(sandbox) == READS


def test_objects_the_platform_answered_without_a_usable_name_are_left_out_and_said(
    hook: AnalyticsHook, empty: SandboxServer, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    with empty.state.lock:
        now = empty.state.now()
        workspace(empty).workflows["wf_blank"] = WorkflowRecord("wf_blank", "  ", "", {}, now, now - timedelta(1))
        workspace(empty).workflows["wf_ok"] = WorkflowRecord("wf_ok", "ok", "", {"deep": [[[1]]]}, now, now)
    exported = hook.export_definitions(kinds=["workflows"])
    assert exported == {"workflows": [{"name": "ok", "description": "", "configuration": {"deep": [[[1]]]}}]}
    assert "workflow wf_blank was not exported: it has no name" in logged(capsys, caplog)


def test_a_dashboard_tile_on_a_chart_the_platform_does_not_list_is_said(
    hook: AnalyticsHook, empty: SandboxServer, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    add_dashboard(empty, "db_dangling", "Dangling", [{"chart_id": "ch_gone", "x": 0, "y": 0, "w": 1, "h": 1}])
    exported = hook.export_definitions(kinds=["dashboards"])
    assert exported["dashboards"][0]["layout"][0]["chart"] == "ch_gone"
    assert "'ch_gone' names no chart in the definitions or on the platform" in logged(capsys, caplog)


# --- definitions pinned by id ------------------------------------------------------------------------------------


def test_a_pinned_dashboard_whose_name_differs_is_renamed_by_an_update(
    hook: AnalyticsHook, empty: SandboxServer
) -> None:
    hook.apply_plan(hook.plan_definitions(definitions()))
    board = hook.export_definitions(kinds=["dashboards"])["dashboards"][0]
    ident = next(iter(workspace(empty).dashboards))
    renamed = {"dashboards": [{**board, "id": ident, "name": "Sales (renamed)"}]}
    plan = hook.plan_definitions(renamed)
    change = next(change for change in plan.changes if change.kind == "dashboard")
    assert (change.action, change.id, [f.field for f in change.fields]) == ("update", ident, ["name"])
    assert not [c for c in plan.changes if c.action == "not_managed" and c.kind == "dashboard"]
    hook.apply_plan(plan)
    assert workspace(empty).dashboards[ident].name == "Sales (renamed)"


def test_a_pinned_id_the_platform_does_not_list_fails_the_plan(hook: AnalyticsHook, empty: SandboxServer) -> None:
    document = {"workflows": [{"name": "w", "configuration": {}, "id": "wf_nowhere"}]}
    with pytest.raises(AnalyticsInputError, match="id: the platform lists no workflow 'wf_nowhere'"):
        hook.plan_definitions(document)


def test_a_shared_name_needs_an_id_on_every_definition_and_each_id_once(
    hook: AnalyticsHook, sandbox: SandboxServer
) -> None:
    unpinned = {"workflows": [{"name": "w", "configuration": {}}, {"name": "w", "configuration": {}, "id": "wf_1"}]}
    with pytest.raises(AnalyticsInputError, match="or give each the 'id' of the platform workflow it manages"):
        hook.plan_definitions(unpinned)
    twice = {
        "workflows": [
            {"name": "w", "configuration": {}, "id": "wf_1"},
            {"name": "w", "configuration": {}, "id": "wf_1"},
        ]
    }
    with pytest.raises(AnalyticsInputError, match="id: 'wf_1' is already managed by definitions: workflows"):
        hook.plan_definitions(twice)
    bad = {"workflows": [{"name": "w", "configuration": {}, "id": "../wf"}]}
    with pytest.raises(AnalyticsInputError, match="id: must be a platform object's id"):
        hook.plan_definitions(bad)
    assert sent(sandbox) == []


def test_a_malformed_reference_in_options_is_refused_before_any_request(
    hook: AnalyticsHook, sandbox: SandboxServer
) -> None:
    chart = {"name": "c", "type": "line", "data_source": "warehouse", "query": "q"}
    document = {"charts": [{**chart, "options": {"auth": {"token": {"from_variable": "t", "feild": "x"}}}}]}
    with pytest.raises(AnalyticsInputError, match=r"options\.auth\.token\.feild: is not a known field of a secret"):
        hook.plan_definitions(document)
    assert sent(sandbox) == []
