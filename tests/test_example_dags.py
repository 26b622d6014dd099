"""The example DAGs parse without errors and without touching the network, and render on every release.

An example that needs a newer Airflow than 2.11 says so in its first lines and is listed in :data:`NEEDS`;
on older releases it is not parsed (it would be an import error there) and its own test is skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from tests.support.airflow_runs import AIRFLOW_VERSION, needs_airflow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "example_dags"
# Example file -> the first Airflow release it runs on.
NEEDS = {"analytics_on_source_sync.py": "3.0", "definitions_reviewed.py": "3.1"}  # AssetWatcher; ApprovalOperator
DAG_IDS = {
    "analytics_on_source_sync.py": "analytics_on_source_sync",
    "dashboards_as_code.py": "analytics_dashboards_as_code",
    "definitions_as_code.py": "analytics_definitions_as_code",
    "definitions_export.py": "analytics_definitions_export",
    "definitions_reviewed.py": "analytics_definitions_reviewed",
    "fire_and_forget.py": "analytics_fire_and_forget",
    "platform_objects.py": "analytics_platform_objects",
    "start_then_sense.py": "analytics_start_then_sense",
    "sync_report_download.py": "analytics_sync_report_download",
    "workflow_outputs.py": "analytics_workflow_outputs",
}


def runnable_here() -> list[Path]:
    """The example files this Airflow release can run."""
    return [EXAMPLES / name for name in sorted(DAG_IDS) if name not in NEEDS or Version(NEEDS[name]) <= AIRFLOW_VERSION]


PARSE = textwrap.dedent(
    """
    import socket, sys

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access at parse time: {args}")

    socket.socket.connect = refuse
    socket.create_connection = refuse
    from tests.support.airflow_runs import load_dagbag

    dag_ids, errors = [], {}
    for path in sys.argv[1:]:
        bag = load_dagbag(path)
        dag_ids += bag.dag_ids
        errors.update(bag.import_errors)
        for dag in bag.dags.values():
            for task in dag.tasks:
                if getattr(task, "deferrable", False) and not task.retries:
                    print(f"DEFERRABLE WITHOUT RETRIES {dag.dag_id}.{task.task_id}")
    print(sorted(dag_ids))
    print(errors)
    sys.exit(1 if errors else 0)
    """
)


def parse(*files: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")}
    return subprocess.run(
        [sys.executable, "-c", PARSE, *map(str, files)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_example_dags_parse_offline() -> None:
    files = runnable_here()
    result = parse(*files)
    assert result.returncode == 0, result.stdout + result.stderr
    assert str(sorted(DAG_IDS[path.name] for path in files)) in result.stdout
    # Airflow 3.3.2 can fail a task that resumes very quickly (docs/deployment.md); a retry reattaches, so the
    # examples that users copy give every deferrable task retries.
    assert "DEFERRABLE WITHOUT RETRIES" not in result.stdout, result.stdout


def test_every_example_is_listed() -> None:
    assert sorted(path.name for path in EXAMPLES.glob("*.py")) == sorted(DAG_IDS)


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_an_example_for_a_newer_airflow_says_so_first(name: Any) -> None:
    version = NEEDS[name]
    opening = "\n".join((EXAMPLES / name).read_text().splitlines()[:5])
    assert f"Needs Airflow {version} or later" in opening


@needs_airflow("3.0", "asset watchers need Airflow 3.0 (the example analytics_on_source_sync)")
def test_the_event_driven_example_parses_offline() -> None:
    result = parse(EXAMPLES / "analytics_on_source_sync.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "['analytics_on_source_sync']" in result.stdout


RENDER = textwrap.dedent(
    """
    import json, sys
    from datetime import datetime, timezone

    from tests.support.airflow_runs import load_dagbag, manual_run_dag_run

    class Ti:
        def xcom_pull(self, task_ids=None, key="return_value", **kwargs):  # XComArgs also pass default=
            return {"id": "x_1", "created_at": "2026-11-23T10:00:00Z"}

    class Variables:
        def get(self, key, default=None):
            return default

    # What a run triggered from the REST API (logical_date null) or `airflow dags trigger` without -l
    # offers templates on Airflow 3: no ds, no logical_date, no data interval; run_after always.
    # On Airflow 2 the same run has a logical date and no run_after.
    context = {
        "dag_run": manual_run_dag_run(datetime(2026, 11, 23, 10, 0, tzinfo=timezone.utc)),
        "run_id": "manual__2026-11-23T10:00:00+00:00",
        "ti": Ti(),
        "var": {"value": Variables()},
    }
    failures = []
    for path in sys.argv[1:]:
        for dag in load_dagbag(path).dags.values():
            for task in dag.tasks:
                if not type(task).__module__.startswith("airflow_provider_analytics"):
                    continue  # @task arguments are XComArgs, resolved by Airflow itself
                try:
                    task.render_template_fields(dict(context))
                except Exception as exc:
                    failures.append(f"{dag.dag_id}.{task.task_id}: {type(exc).__name__}: {exc}")
                else:
                    fields = {name: str(getattr(task, name)) for name in task.template_fields}
                    print("RENDERED " + json.dumps({"task": f"{dag.dag_id}.{task.task_id}", **fields}))
    print("\\n".join(failures) or "all rendered")
    sys.exit(1 if failures else 0)
    """
)


def rendered(stdout: str) -> dict[str, dict[str, str]]:
    """The rendered template fields the script printed, by ``dag_id.task_id``."""
    found = {}
    for line in stdout.splitlines():
        if line.startswith("RENDERED "):
            fields = json.loads(line.removeprefix("RENDERED "))
            found[fields.pop("task")] = fields
    return found


def test_example_templates_render_in_a_manual_run() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")}
    result = subprocess.run(
        [sys.executable, "-c", RENDER, *map(str, runnable_here())],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    assert "all rendered" in result.stdout
    # The run's day and hour, from run_after on Airflow 3 and from the logical date on Airflow 2.
    fields = rendered(result.stdout)
    assert "'day': '2026-11-23'" in fields["analytics_workflow_outputs.enrich"]["inputs"]
    assert "'hour': '2026-11-23T10:00:00+00:00'" in fields["analytics_fire_and_forget.start_refresh"]["inputs"]
    assert fields["analytics_sync_report_download.generate"]["name"] == "sales-2026-11-23"
