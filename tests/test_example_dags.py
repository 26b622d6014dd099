"""The example DAGs parse without errors and without touching the network."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "example_dags"

SCRIPT = textwrap.dedent(
    """
    import socket, sys

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access at parse time: {args}")

    socket.socket.connect = refuse
    socket.create_connection = refuse
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=sys.argv[1])
    print(sorted(bag.dag_ids))
    print(bag.import_errors)
    sys.exit(1 if bag.import_errors else 0)
    """
)


def test_example_dags_parse_offline():
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(EXAMPLES)], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "['analytics_dashboards_as_code', 'analytics_fire_and_forget', 'analytics_on_source_sync', "
        "'analytics_sync_report_download', 'analytics_workflow_outputs']" in result.stdout
    )


RENDER = textwrap.dedent(
    """
    import sys
    from datetime import datetime, timezone
    from types import SimpleNamespace

    from airflow.dag_processing.dagbag import DagBag

    class Ti:
        def xcom_pull(self, task_ids=None, key="return_value", **kwargs):  # XComArgs also pass default=
            return {"id": "x_1", "created_at": "2026-11-23T10:00:00Z"}

    class Variables:
        def get(self, key, default=None):
            return default

    # What a run triggered from the REST API (logical_date null) or `airflow dags trigger` without -l
    # offers templates: no ds, no logical_date, no data interval; run_after always.
    context = {
        "dag_run": SimpleNamespace(run_after=datetime(2026, 11, 23, 10, 0, tzinfo=timezone.utc), logical_date=None),
        "run_id": "manual__2026-11-23T10:00:00+00:00",
        "ti": Ti(),
        "var": {"value": Variables()},
    }
    bag = DagBag(dag_folder=sys.argv[1])
    failures = []
    for dag in bag.dags.values():
        for task in dag.tasks:
            if not type(task).__module__.startswith("airflow_provider_analytics"):
                continue  # @task arguments are XComArgs, resolved by Airflow itself
            try:
                task.render_template_fields(dict(context))
            except Exception as exc:
                failures.append(f"{dag.dag_id}.{task.task_id}: {type(exc).__name__}: {exc}")
    print("\\n".join(failures) or "all rendered")
    sys.exit(1 if failures else 0)
    """
)


def test_example_templates_render_without_a_logical_date():
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")}
    result = subprocess.run(
        [sys.executable, "-c", RENDER, str(EXAMPLES)], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    assert "all rendered" in result.stdout
