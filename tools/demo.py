"""``make demo``: run every example DAG end to end against a local sandbox and show what happened.

Starts the sandbox platform (demo speed, data sources auto-syncing), migrates a throw-away Airflow
metadata DB under ``.demo/``, runs each DAG in ``example_dags/`` with ``airflow dags test`` (deferrable
tasks included: their triggers run inline), then prints task states, execution outputs, the dashboard
versions and the downloaded report's path, size and sha256. Exits non-zero if any run failed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from demo_events import show_event_driven_start
from demo_review import run_reviewed_apply

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / ".demo"
BIN = Path(sys.executable).parent
# (dag id, logical date); the dashboards DAG runs twice to show the second run updating, not duplicating.
PLAN = [
    ("analytics_workflow_outputs", None),
    ("analytics_sync_report_download", None),
    ("analytics_dashboards_as_code", "2026-11-19"),
    ("analytics_dashboards_as_code", "2026-11-20"),
    ("analytics_fire_and_forget", None),
    ("analytics_platform_objects", None),
    ("analytics_start_then_sense", None),
    ("analytics_definitions_as_code", None),
    ("analytics_definitions_export", None),
]


def start_sandbox(env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    log = (DEMO / "sandbox.log").open("w")
    command = [sys.executable, "-m", "airflow_provider_analytics.sandbox", "--port", "0", "--speed", "demo"]
    sandbox = subprocess.Popen([*command, "--auto-sync", "8"], stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    assert sandbox.stdout is not None
    connection = sandbox.stdout.readline().strip()
    if not connection.startswith("{"):
        sandbox.kill()
        raise SystemExit(f"the sandbox did not start; see {DEMO / 'sandbox.log'}")
    return sandbox, connection


def run_dags(env: dict[str, str]) -> list[tuple[str, int, float]]:
    outcomes = []
    for dag_id, logical_date in PLAN:
        started = time.monotonic()
        command = [str(BIN / "airflow"), "dags", "test", dag_id, *([logical_date] if logical_date else [])]
        log_path = DEMO / "logs" / f"{dag_id}-{logical_date or 'now'}.log"
        with log_path.open("w") as log:
            code = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
        seconds = time.monotonic() - started
        outcomes.append((dag_id, code, seconds))
        when = logical_date or "now"
        print(f"  {dag_id:<34} {when:<11} exit {code}  {seconds:5.1f} s  log: {log_path.relative_to(ROOT)}")
    return outcomes


def summarise() -> bool:
    from airflow.models.dagrun import DagRun
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    all_ok = True
    with create_session() as session:
        for run in session.query(DagRun).order_by(DagRun.id):
            all_ok &= str(run.state) == "success"
            print(f"\n{run.dag_id}  ({run.run_id}): {run.state}")
            for ti in sorted(run.get_task_instances(session=session), key=lambda ti: ti.start_date or ti.end_date or 0):
                print(f"    {ti.task_id:<20} {ti.state}")
            xcoms = session.query(XComModel).filter(XComModel.run_id == run.run_id, XComModel.dag_id == run.dag_id)
            for row in xcoms:
                describe(row.task_id, row.key, row.value)
    return all_ok


def describe(task_id: str, key: str, value: Any) -> None:
    if not isinstance(value, dict) or key not in ("return_value", "download"):
        if key.startswith("_link_"):
            print(f"    link  {task_id}: {value}")
        elif key == "return_value" and isinstance(value, str):
            print(f"    {task_id} returned {value!r}")
        return
    if "files" in value and "pinned" in value:  # ExportDefinitionsOperator
        print(f"    exported {json.dumps(value['counts'])} to {value['files_written']} files")
    elif "plan" in value and isinstance(value["plan"], dict):  # ApplyDefinitionsOperator
        written = (value.get("applied") or {}).get("counts")
        print(f"    {value['plan'].get('summary')}; written: {json.dumps(written)}")
    elif key == "download":
        print(f"    report file  {value['uri']}  {value['size']} bytes  sha256 {value['sha256']}")
    elif "outputs" in value:
        print(f"    execution {value['id']}: {value['status']}  outputs {json.dumps(value['outputs'])[:150]}")
    elif "version" in value:
        print(f"    dashboard {value['id']} '{value.get('name')}' at version {value['version']}")
    elif "last_synced_at" in value:
        print(f"    {value['data_source_id']} {value['status']}, last synced {value['last_synced_at']}")
    elif "rows" in value and "uri" in value:  # GetChartDataOperator with a destination
        print(f"    chart export  {value['uri']}  {value['rows']} rows ({value['format']})")
    elif "rows" in value:  # GetChartDataOperator without one: the rows through XCom
        print(f"    chart {value['chart_id']}: {len(value['rows'])} rows to XCom")
    elif str(value.get("id", "")).startswith(("ds_", "wf_")):
        print(f"    {value['id']} '{value.get('name')}' created")
    elif value.get("format"):
        print(f"    report {value['id']} ({value['format']}): {value['status']}, {value.get('size_bytes')} bytes")
    elif str(value.get("id", "")).startswith("ch_"):
        print(f"    chart {value['id']} '{value.get('name')}'")


def main() -> int:
    shutil.rmtree(DEMO, ignore_errors=True)
    (DEMO / "logs").mkdir(parents=True)
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(DEMO / "airflow-home"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "example_dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_VAR_ANALYTICS_EXPORT_DIR": str(DEMO / "exports"),
    }
    print("Starting the sandbox platform ...")
    sandbox, connection = start_sandbox(env)
    env["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = connection
    try:
        print(f"  connection: {connection}")
        print("Migrating a fresh Airflow metadata DB under .demo/ ...")
        subprocess.run([str(BIN / "airflow"), "db", "migrate"], env=env, check=True, capture_output=True)
        print("Running the example DAGs with `airflow dags test` ...")
        outcomes = run_dags(env)
        print("Planning, approving and applying definitions (analytics_definitions_reviewed) ...")
        outcomes.append(run_reviewed_apply(env, BIN / "airflow", DEMO))
        os.environ.update(env)
        ok = summarise() and all(code == 0 for _, code, _ in outcomes)
        ok = show_event_driven_start(env, DEMO) and ok  # tools/demo_events.py
    finally:
        sandbox.terminate()
        sandbox.wait(timeout=10)
    exports = sorted(p for p in (DEMO / "exports").rglob("*") if p.is_file())
    print("\nFiles written:", *(f"{p.relative_to(ROOT)} ({p.stat().st_size} bytes)" for p in exports), sep="\n  ")
    print("\nDemo " + ("succeeded." if ok else "FAILED: see the logs above."))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
