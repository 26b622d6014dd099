"""The README's ten-line DAG downloads each run's report to a folder of that run: its next run does not fail.

A folder destination takes the report's file name, the same every day, and ``overwrite`` is off: with one folder
for all runs the second run found the first one's file and failed. The README's download task is rendered for two
runs, as Airflow renders it, and run against the sandbox (into ``tmp_path`` instead of ``/tmp/sales``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.version_compat import AIRFLOW_V_3_0_PLUS
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.support.context import StubTaskInstance, make_context
from tests.support.final import raises_final
from tests.support.reports import files_under, ready_report

README = Path(__file__).resolve().parents[2] / "README.md"
README_FOLDER = "/tmp/sales/"
RUNS = ("scheduled__2026-11-25T00:00:00+00:00", "scheduled__2026-11-26T00:00:00+00:00")

pytestmark = pytest.mark.skipif(not AIRFLOW_V_3_0_PLUS, reason="the README's DAG imports airflow.sdk (Airflow 3)")


class UpstreamReport(StubTaskInstance):
    """A task instance whose ``xcom_pull`` returns the report the upstream task generated."""

    def __init__(self, report: dict[str, Any], run_id: str) -> None:
        super().__init__()
        self.report = report
        self.run_id = run_id

    def xcom_pull(self, task_ids: str | None = None, **kwargs: Any) -> Any:
        assert task_ids == "report"
        return self.report


def readme_download_task() -> Any:
    """The ``download`` task of the README's first Python block, built from the README's own text."""
    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert block is not None
    namespace: dict[str, Any] = {"__name__": "readme_dag"}
    exec(compile(block.group(1), "README.md (python block 1)", "exec"), namespace)
    return namespace["download"]


def run_download(task: Any, report: dict[str, Any], run_id: str, folder: Path) -> str:
    """Render the task for ``run_id`` as Airflow would, write under ``folder`` instead of /tmp/sales, execute."""
    ti = UpstreamReport(report, run_id)
    context = make_context(ti=ti, run_id=run_id)
    task.render_template_fields(context)
    assert task.destination.startswith(README_FOLDER), task.destination
    task.destination = f"{folder}/{task.destination.removeprefix(README_FOLDER)}"
    uri: str = task.execute(context)
    return uri


def test_each_run_of_the_readme_dag_downloads_into_its_own_folder(
    sandbox: SandboxServer, hook: AnalyticsHook, tmp_path: Path
) -> None:
    assert "{{ run_id }}" in readme_download_task().destination  # not {{ ds }}: a REST-triggered run has none
    report = ready_report(hook, sandbox, dashboard_ids=("db_sales",))
    written = [run_download(readme_download_task(), report, run_id, tmp_path) for run_id in RUNS]
    assert [Path(uri).parent.name for uri in written] == list(RUNS)
    assert Path(written[0]).name == Path(written[1]).name  # the same report name: only the folder tells them apart
    assert files_under(tmp_path) == sorted(f"{run_id}/{Path(written[0]).name}" for run_id in RUNS)


def test_one_folder_for_every_run_fails_the_second_run(
    sandbox: SandboxServer, hook: AnalyticsHook, tmp_path: Path
) -> None:
    # The README's destination before: every run into /tmp/sales/, under the report's own name.
    report = ready_report(hook, sandbox, dashboard_ids=("db_sales",))
    first, second = readme_download_task(), readme_download_task()
    first.destination = second.destination = README_FOLDER
    run_download(first, report, RUNS[0], tmp_path)
    with raises_final(AnalyticsInputError, match="already exists: pass overwrite=True"):
        run_download(second, report, RUNS[1], tmp_path)
