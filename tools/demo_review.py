"""``make demo``'s reviewed apply: plan, a person's approval given through Airflow's REST API, then apply.

Runs ``analytics_definitions_reviewed`` (example_dags/definitions_reviewed.py) with ``airflow dags test``, which
parks the run at the ``approve`` task (Airflow's ``ApprovalOperator``). The demo plays the reviewer: it starts
Airflow's api-server on the same metadata DB, waits for the approval request, shows the plan it is asked to
approve (the plan task's summary, from the same REST API), and approves it there, as the Required Actions page
would; the parked run then resumes and ``apply`` applies that plan. Every process started here is stopped here.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

DAG_ID = "analytics_definitions_reviewed"
_WAIT_SECONDS = 180


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _call(base: str, method: str, path: str, token: str | None = None, body: Any = None) -> Any:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read() or b"null")


def _until(what: str, check: Any, deadline: float) -> Any:
    while time.monotonic() < deadline:
        try:
            found = check()
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            found = None
        if found:
            return found
        time.sleep(1)
    raise TimeoutError(f"gave up waiting for {what}")


def _pending_approval(base: str, token: str) -> dict[str, Any] | None:
    answer = _call(base, "GET", f"/api/v2/dags/{DAG_ID}/dagRuns/~/hitlDetails", token)
    waiting = [item for item in answer.get("hitl_details", []) if not item.get("response_received")]
    return waiting[0] if waiting else None


def _approve(base: str, deadline: float) -> int:
    """Wait for the approval request, show the plan it is about, approve it; 0 when approved."""
    try:
        token = _until("the api-server", lambda: _call(base, "GET", "/auth/token")["access_token"], deadline)
        request = _until("the approval request", lambda: _pending_approval(base, token), deadline)
        ti = request["task_instance"]
        run_path = f"/api/v2/dags/{DAG_ID}/dagRuns/{ti['dag_run_id']}/taskInstances"
        entry = _call(base, "GET", f"{run_path}/plan/xcomEntries/return_value?deserialize=true&stringify=false", token)
        value = json.loads(entry["value"]) if isinstance(entry["value"], str) else entry["value"]
        print(f"  {DAG_ID}: {request['subject']!r} asks to apply: {value['plan']['summary']}")
        answer = {"chosen_options": ["Approve"]}
        _call(base, "PATCH", f"{run_path}/approve/{ti['map_index']}/hitlDetails", token, answer)
    except (TimeoutError, urllib.error.HTTPError, KeyError, TypeError, ValueError) as error:
        print(f"  {DAG_ID}: no approval given: {error}")
        return 1
    print(f"  {DAG_ID}: approved through Airflow's REST API, as the Required Actions page does")
    return 0


def run_reviewed_apply(env: dict[str, str], airflow: Path, demo: Path) -> tuple[str, int, float]:
    """Run the DAG, approve its plan through the REST API, and return ``(dag id, exit code, seconds)``.

    :param env: the demo's environment (AIRFLOW_HOME, the connection, the DAG folder).
    :param airflow: the ``airflow`` command.
    :param demo: the demo's folder (logs go to ``logs/``).
    """
    started = time.monotonic()
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    server_env = {**env, "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True"}
    logs = demo / "logs"
    with (logs / "api-server.log").open("w") as server_log, (logs / f"{DAG_ID}-now.log").open("w") as run_log:
        server = subprocess.Popen(
            [str(airflow), "api-server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
            env=server_env,
            stdout=server_log,
            stderr=subprocess.STDOUT,
        )
        command = [str(airflow), "dags", "test", DAG_ID]
        run = subprocess.Popen(command, env=env, stdout=run_log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + _WAIT_SECONDS
            code = _approve(base, deadline)
            if code == 0:
                code = run.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            print(f"  {DAG_ID}: the run did not end within {_WAIT_SECONDS} s of its start")
            code = 1
        finally:
            for process in (run, server):
                if process.poll() is None:
                    process.terminate()
                    try:
                        process.wait(timeout=20)
                    except subprocess.TimeoutExpired:
                        process.kill()
                        process.wait()
    return DAG_ID, code, time.monotonic() - started
