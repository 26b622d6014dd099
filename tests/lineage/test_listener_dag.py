"""A real ``dag.test()`` with the OpenLineage listener on and a file transport: the COMPLETE events carry the
provider's datasets, validate against the schemas, and a lineage call that fails leaves the task green.

It runs in a fresh interpreter: the OpenLineage provider reads its settings once per process, and the
lineage DAG lives in its own dags folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from airflow_provider_analytics.lineage._facets import FACET_NAME
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.lineage.openlineage_schemas import event_errors
from tests.support.airflow_runs import RUN_ENV, broken_in_airflow, migrate_db

ROOT = Path(__file__).resolve().parents[2]
DAGS = Path(__file__).with_name("dags")
_RUN = textwrap.dedent(
    """
    import json, os, sys
    from tests.support.airflow_runs import RunResult, load_dagbag, run_dag_test

    bag = load_dagbag(os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    assert not bag.import_errors, bag.import_errors
    run = RunResult.of(run_dag_test(bag.get_dag("lineage_chain"), {"folder": sys.argv[1]}))
    # A file, not stdout: Airflow 2.11 logs to stdout from other threads, and a line could be interleaved.
    with open(sys.argv[2], "w") as result:
        json.dump(run.states, result)
    """
)


@pytest.fixture(scope="module")
def migrated_home() -> str:
    """The session's AIRFLOW_HOME (tests/conftest.py), migrated once for these runs."""
    migrate_db()
    return os.environ["AIRFLOW_HOME"]


def completes(events_file: Path) -> dict[str, dict[str, Any]]:
    """The COMPLETE event of each task, by task id."""
    events = [json.loads(line) for line in events_file.read_text().splitlines() if line.strip()]
    found = {}
    for event in events:
        name = event["job"]["name"]
        if event.get("eventType") == "COMPLETE" and name.startswith("lineage_chain."):
            found[name.removeprefix("lineage_chain.")] = event
    return found


def datasets(event: dict[str, Any], side: str) -> list[tuple[str, str]]:
    return [(dataset["namespace"], dataset["name"]) for dataset in event[side]]


@broken_in_airflow(
    "3.0",
    "Airflow 3.0's dag.test() never registers a DAG's assets, so a task with outlets fails with 'inactive "
    "assets'; a deployed DAG (parsed by the dag processor) is not affected",
)
def test_dag_test_emits_the_provider_lineage(migrated_home: str, sandbox: SandboxServer, tmp_path: Path) -> None:
    events_file = tmp_path / "events.jsonl"
    states_file = tmp_path / "states.json"
    folder = tmp_path / "files"
    folder.mkdir()
    host = urlsplit(sandbox.base_url).netloc
    platform = f"analytics://{host}"
    # Only lineage reads the chart list (GET /v1/charts): the platform "fails" it, the tasks never see it.
    sandbox.state.inject(Fault.status(503, method="GET", path="^/v1/charts$", times=20))
    env = dict(
        os.environ,
        **RUN_ENV,
        AIRFLOW_CONN_ANALYTICS_DEFAULT=sandbox.connection_json(),
        AIRFLOW__CORE__DAGS_FOLDER=str(DAGS),
        AIRFLOW__OPENLINEAGE__TRANSPORT=json.dumps({"type": "file", "log_file_path": str(events_file), "append": True}),
        AIRFLOW__OPENLINEAGE__NAMESPACE="lineage-test",
        LINEAGE_TEST_HOST=host,
    )
    result = subprocess.run(
        [sys.executable, "-c", _RUN, str(folder), str(states_file)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    states = json.loads(states_file.read_text())
    assert set(states.values()) == {"success"}, states

    events = completes(events_file)
    assert set(events) == set(states)
    chart_id = events["chart"]["run"]["facets"][FACET_NAME]["ids"]["chart_id"]
    dashboard_id = events["dashboard"]["run"]["facets"][FACET_NAME]["ids"]["dashboard_id"]
    report_id = events["report"]["run"]["facets"][FACET_NAME]["ids"]["report_id"]
    (downloaded,) = [path for path in folder.iterdir() if path.name != "r.csv"]
    assert datasets(events["refresh"], "inputs") == [(platform, "workflow/wf_nightly_enrichment")]
    assert datasets(events["refresh"], "outputs") == [(platform, "data_source/ds_warehouse")]
    assert datasets(events["chart"], "inputs") == [(platform, "data_source/ds_warehouse")]
    assert datasets(events["chart"], "outputs") == [(platform, f"chart/{chart_id}")]
    assert datasets(events["dashboard"], "inputs") == [(platform, f"chart/{chart_id}")]
    assert datasets(events["dashboard"], "outputs") == [(platform, f"dashboard/{dashboard_id}")]
    assert datasets(events["report"], "inputs") == [(platform, f"dashboard/{dashboard_id}")]
    assert datasets(events["report"], "outputs") == [(platform, f"report/{report_id}")]
    assert datasets(events["download"], "inputs") == [(platform, f"report/{report_id}")]
    assert datasets(events["download"], "outputs") == [("file", str(downloaded))]
    # The lineage call the platform refused: partial lineage, a gap said, and the task succeeded.
    assert datasets(events["rows"], "inputs") == [(platform, "chart/ch_revenue")]
    assert "503" in events["rows"]["run"]["facets"][FACET_NAME]["gaps"][0]
    execution = events["refresh"]["run"]["facets"][FACET_NAME]
    assert execution["status"] == "succeeded"
    assert execution["ids"]["execution_id"].startswith("ex_")
    # The listener's own parent facet (the DAG run) is kept: ours never replaces it.
    assert events["report"]["run"]["facets"]["parent"]["job"]["name"] == "lineage_chain"
    for task_id, event in events.items():
        problems, _ = event_errors(event)
        assert problems == [], (task_id, problems)
