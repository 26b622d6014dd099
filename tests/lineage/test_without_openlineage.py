"""Without the ``openlineage`` extra: the operators import and run, and their facet methods return ``None``.

A fresh interpreter blocks every ``openlineage`` and ``airflow.providers.openlineage`` import, as if the
extra were not installed, and runs operators against the test's sandbox over a real socket.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from airflow_provider_analytics.sandbox.server import SandboxServer

_SCRIPT = textwrap.dedent(
    """
    import importlib.abc, importlib.metadata, json, sys

    class NoOpenLineage(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "openlineage" or name.startswith(("openlineage.", "airflow.providers.openlineage")):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
            return None

    sys.meta_path.insert(0, NoOpenLineage())
    # Not installed also means Airflow's provider discovery finds no such distribution (no entry point);
    # before Python 3.12 Airflow reads them through the importlib_metadata backport.
    def hide_openlineage_distributions(module):
        every = module.distributions
        module.distributions = lambda **kwargs: [
            dist for dist in every(**kwargs) if "openlineage" not in (dist.metadata["Name"] or "")
        ]

    hide_openlineage_distributions(importlib.metadata)
    try:
        import importlib_metadata
    except ImportError:
        pass
    else:
        hide_openlineage_distributions(importlib_metadata)

    from airflow.providers.common.compat.sdk import Asset
    from airflow_provider_analytics.operators.charts import CreateChartOperator
    from airflow_provider_analytics.operators.reports import GenerateReportOperator
    from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
    from tests.lineage.conftest import run_task

    results = {}
    chart = CreateChartOperator(task_id="chart", name="c", type="bar", data_source_id="ds_warehouse", query="q")
    ti = run_task(chart)
    results["chart_id"] = ti.xcom["return_value"]["id"]
    results["chart_lineage"] = repr(chart.get_openlineage_facets_on_complete(ti))
    report = GenerateReportOperator(task_id="report", dashboard_ids=["db_sales"], poll_interval=0.1, deferrable=False)
    ti = run_task(report)
    results["report_status"] = ti.xcom["return_value"]["status"]
    results["report_lineage"] = repr(report.get_openlineage_facets_on_failure(ti))
    execute = ExecuteWorkflowOperator(task_id="x", workflow_id="wf_nightly_enrichment", poll_interval=0.1)
    results["execute_lineage"] = repr(execute.get_openlineage_facets_on_complete(run_task(execute)))
    results["asset"] = Asset("analytics://Platform.example/chart/ch_1").uri
    results["loaded"] = sorted(name for name in sys.modules if "openlineage" in name)
    print("RESULT " + json.dumps(results))
    """
)


def test_operators_run_and_report_nothing_without_openlineage(sandbox: SandboxServer) -> None:
    env = dict(os.environ, AIRFLOW_CONN_ANALYTICS_DEFAULT=sandbox.connection_json())
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith("RESULT "))
    results = json.loads(line[len("RESULT ") :])
    assert results["chart_id"] in {chart["id"] for chart in sandbox.state.charts()}
    assert results["report_status"] == "ready"
    assert (results["chart_lineage"], results["report_lineage"], results["execute_lineage"]) == ("None",) * 3
    assert results["asset"] == "analytics://platform.example/chart/ch_1", "the URI scheme needs no OpenLineage"
    assert results["loaded"] == [], results["loaded"]
