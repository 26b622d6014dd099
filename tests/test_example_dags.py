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
        "['analytics_dashboards_as_code', 'analytics_fire_and_forget', 'analytics_sync_report_download', "
        "'analytics_workflow_outputs']" in result.stdout
    )
