"""``ApplyDefinitionsOperator`` and the hook's ``plan_definitions``/``apply_plan``, against the sandbox.

The planning and applying themselves are tested in the sibling modules; here: what a task sends, returns and
logs, the DAG folder as the base of relative paths, a task failed without retries on bad definitions, and the
lineage of what was written (the key seeds: ``test_honest_apply.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import DAG

from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator
from airflow_provider_analytics.operators.errors import FinalFailure
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.definitions.helpers import PASSWORD, definitions, sent, write_file
from tests.lineage.conftest import names, namespace, run_task
from tests.support.context import make_context
from tests.support.task_log import task_log

CREATES = {"data_source": 1, "chart": 2, "dashboard": 1, "workflow": 1}


def writes_in(requests: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [request for request in requests if request[0] != "GET"]


def test_plan_only_reads_and_writes_nothing(empty: SandboxServer) -> None:
    operator = ApplyDefinitionsOperator(task_id="plan", definitions=definitions(), plan_only=True)
    result = operator.execute(make_context())
    assert result["applied"] is None
    assert result["plan"]["counts"]["create"] == sum(CREATES.values())
    assert writes_in(sent(empty)) == []
    assert len(sent(empty)) == 4  # one listing per kind


def test_apply_then_a_second_run_sends_only_the_reads(empty: SandboxServer, caplog: pytest.LogCaptureFixture) -> None:
    first = ApplyDefinitionsOperator(task_id="apply", definitions=definitions()).execute(make_context())
    written = first["applied"]["written"]
    assert {kind: sum(item["kind"] == kind for item in written) for kind in CREATES} == CREATES
    dashboard = next(item for item in written if item["kind"] == "dashboard")
    assert first["links"] == {"Sales": f"{empty.base_url}/ui/dashboards/{dashboard['id']}"}
    assert PASSWORD not in repr(first)
    assert PASSWORD not in caplog.text

    before = len(empty.state.requests)
    second = ApplyDefinitionsOperator(task_id="apply", definitions=definitions()).execute(make_context())
    assert second["plan"]["counts"]["unchanged"] == sum(CREATES.values())
    assert second["applied"]["written"] == []
    assert second["links"] == {}
    assert writes_in(sent(empty, before)) == []
    assert len(sent(empty, before)) == 4


def test_relative_paths_are_read_from_the_dag_folder(
    empty: SandboxServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "definitions").mkdir()
    write_file(tmp_path / "definitions", "sales.yaml", definitions())
    monkeypatch.chdir(Path("/"))  # a worker's working directory is not the DAG folder
    with DAG(dag_id="definitions_dag", schedule=None) as dag:
        operator = ApplyDefinitionsOperator(task_id="apply", definitions="definitions/*.yaml", plan_only=True)
    dag.fileloc = str(tmp_path / "dag.py")
    result = operator.execute(make_context())
    assert result["plan"]["sources"] == [str(tmp_path / "definitions" / "sales.yaml")]


def test_bad_definitions_fail_the_task_without_retries_before_any_request(empty: SandboxServer) -> None:
    broken: dict[str, Any] = definitions()
    broken["charts"][0]["colour"] = "red"
    operator = ApplyDefinitionsOperator(task_id="apply", definitions=broken, retries=3)
    with pytest.raises(FinalFailure, match=r"charts\[0\] 'Revenue': colour"):
        operator.execute(make_context())
    assert sent(empty) == []


@pytest.mark.parametrize("plan_only", [True, False], ids=["plan-only", "apply"])
def test_an_object_that_cannot_be_applied_is_a_warning_in_every_mode(
    empty: SandboxServer, caplog: pytest.LogCaptureFixture, plan_only: bool
) -> None:
    ApplyDefinitionsOperator(task_id="apply", definitions=definitions()).execute(make_context())
    changed: dict[str, Any] = definitions()
    changed["charts"][0]["type"] = "area"  # the API cannot update a chart
    operator = ApplyDefinitionsOperator(task_id="apply", definitions=changed, plan_only=plan_only)
    with task_log(caplog) as lines:
        if plan_only:  # a review step stays green: the WARNING is what tells
            assert operator.execute(make_context())["plan"]["counts"]["cannot_apply"] == 1
        else:
            with pytest.raises(FinalFailure):
                operator.execute(make_context())
    warnings = [message for level, message in lines if level == "warning"]
    assert warnings == [
        f"1 object(s) of the plan cannot be applied: chart {changed['charts'][0]['name']!r}. They differ from the "
        "platform's and the API has no update for them, so an apply of this plan is refused before any write; the "
        "plan's table says what to change for each"
    ]


def test_lineage_names_what_was_written(empty: SandboxServer) -> None:
    operator = ApplyDefinitionsOperator(task_id="apply", definitions=definitions())
    ti = run_task(operator)
    written = ti.xcom["return_value"]["applied"]["written"]
    lineage = operator.get_openlineage_facets_on_complete(ti)
    platform = namespace(empty)
    assert names(lineage.outputs) == [(platform, f"{item['kind']}/{item['id']}") for item in written]
