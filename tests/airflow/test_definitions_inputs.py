"""Input the definitions refuse fails the task at its first try in a real Airflow run, though it has retries.

Each of these ended in a bare Python exception that Airflow retried as if it were transient: chained merge keys
(``RecursionError``, three tries), a tag on the wrong kind of node (``TypeError``), a lone surrogate in a JSON file
(``UnicodeEncodeError`` after the dashboard was created), a reviewed plan 5,000 levels deep (``RecursionError``),
and a lone surrogate the platform listed (a private YAML error); a reviewed plan deeper than any plan was compared
after the listings. The DAGs are in ``dags/definitions_inputs.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_provider_analytics.sandbox.domain.config import DEFAULT_WORKSPACE
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.definitions.test_yaml_tags_and_merges import chained_merges
from tests.support.airflow_runs import RunDag


def names_of(sandbox: SandboxServer, kind: str) -> list[str]:
    listed = sandbox.state.dashboards(DEFAULT_WORKSPACE) if kind == "dashboards" else sandbox.state.workflows()
    return [item["name"] for item in listed]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("tag.yaml", "workflows:\n  - name: tagged\n    configuration: !!map [1, 2]\n"),
        ("set.yaml", "workflows:\n  - name: tagged\n    configuration: {a: !!set [a]}\n"),
        (
            "surrogate.json",
            json.dumps(
                {"dashboards": [{"name": "Board"}], "workflows": [{"name": "w", "configuration": {"a": "\ud800"}}]}
            ),
        ),
    ],
    ids=["map-on-a-list", "set", "lone-surrogate"],
)
def test_a_file_the_definitions_refuse_fails_at_the_first_try_before_any_write(
    run_dag: RunDag, sandbox: SandboxServer, tmp_path: Path, name: str, text: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")

    result = run_dag("test_definitions_file", path=str(path))

    assert (result.states["apply"], result.tries["apply"]) == ("failed", 1)
    assert [entry for entry in sandbox.state.requests if entry.method != "GET"] == []
    assert "Board" not in names_of(sandbox, "dashboards")


def test_a_chain_of_merges_is_applied_at_the_first_try(run_dag: RunDag, sandbox: SandboxServer, tmp_path: Path) -> None:
    path = tmp_path / "chained.yaml"
    path.write_text(chained_merges(), encoding="utf-8")

    result = run_dag("test_definitions_file", path=str(path))

    assert (result.states["apply"], result.tries["apply"]) == ("success", 1)
    [workflow] = [item for item in sandbox.state.workflows() if item["name"] == "hostile"]
    assert workflow["configuration"]["top"] == {"x": 0, "y": 1}


def test_a_reviewed_plan_deeper_than_any_plan_fails_at_the_first_try_before_any_request(
    run_dag: RunDag, sandbox: SandboxServer
) -> None:
    # 150 levels: no plan nests deeper than 106, and Airflow itself carries a rendered value that deep (its own
    # check of the rendered fields refuses 300 levels, and recurses at 5,000, before the task runs).
    result = run_dag("test_definitions_reviewed_input", depth=150)

    assert (result.states["apply"], result.tries["apply"]) == ("failed", 1)
    assert sandbox.state.requests == []  # refused before the plan's listings


def test_an_export_of_a_text_no_file_can_carry_fails_at_the_first_try(
    run_dag: RunDag, sandbox: SandboxServer, tmp_path: Path
) -> None:
    listed = {"id": "wf_half", "name": "half\ud800", "description": "", "configuration": {}}
    body = json.dumps({"data": [listed], "next_cursor": None})
    headers = {"Content-Type": "application/json"}
    sandbox.state.inject(Fault.respond(200, headers=headers, body=body, path="/workflows$", times=10))

    result = run_dag("test_definitions_export_input", folder=str(tmp_path))

    assert (result.states["export"], result.tries["export"]) == ("failed", 1)
    assert list(tmp_path.iterdir()) == []
