"""``make demo``'s event-driven section: a sync on the sandbox starts ``analytics_on_source_sync``.

What is real: the sandbox (over HTTP), the watcher's trigger built from the example DAG file exactly as the
triggerer builds it (Airflow's trigger encoding and kwargs decoding), its ``run()`` polling the sandbox, and
``airflow dags test`` running the DAG. What is simulated (and printed as such): the asset state store is a
dict instead of Airflow's database, and the DAG run is a manual one, because ``airflow dags test`` cannot be
given triggering asset events; its first task reads the same sync status the event carried. ``make e2e``
runs all of it under a real scheduler and triggerer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import runpy
import secrets
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DAG_ID = "analytics_on_source_sync"
SOURCE = "ds_warehouse"


class DictStateStore:
    """Stands in for the asset state store the triggerer hands a watcher (``aget``/``aset`` of one asset)."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    async def aget(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    async def aset(self, key: str, value: Any) -> None:
        self.values[key] = value


def as_the_triggerer_builds_it(store: DictStateStore) -> Any:
    """The example's watcher trigger: parsed from the DAG file, stored, decoded, instantiated, given a store."""
    from airflow.serialization.decoders import smart_decode_trigger_kwargs
    from airflow.serialization.encoders import encode_trigger

    [watcher] = runpy.run_path(str(ROOT / "example_dags" / f"{DAG_ID}.py"))["warehouse_synced"].watchers
    encoded = encode_trigger(watcher.trigger)
    module_name, _, class_name = encoded["classpath"].rpartition(".")
    cls = getattr(__import__(module_name, fromlist=[class_name]), class_name)
    kwargs = encoded["kwargs"].items()
    trigger = cls(**{key: smart_decode_trigger_kwargs(value) for key, value in kwargs})  # type: ignore[no-untyped-call]  # unannotated in Airflow
    trigger.asset_state_store = store
    return trigger


async def watch(
    trigger: Any, sandbox_url: str, seconds: float, start_sync: bool, admin_token: str = ""
) -> list[dict[str, Any]]:
    """Run the trigger for ``seconds`` (starting a sync after its first poll if asked, through the sandbox's
    control route with its ``admin_token``); its event payloads."""
    payloads: list[dict[str, Any]] = []

    async def drain() -> None:
        async for event in trigger.run():
            payloads.append(event.payload)
            print(f"    event: {json.dumps(event.payload)}")

    task = asyncio.create_task(drain())
    await asyncio.sleep(trigger.poll_interval + 0.5)  # the first poll: it records the watermark
    if start_sync:
        status = _post(f"{sandbox_url}/_sandbox/data-sources/{SOURCE}/sync", {"outcome": "synced"}, admin_token)
        print(f"    sandbox admin: started a sync of {SOURCE} at {status['last_attempt_at']}")
    await asyncio.sleep(seconds)
    if task.done():
        task.result()
    task.cancel()  # what a triggerer restart does
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return payloads


def show_event_driven_start(env: dict[str, str], demo: Path) -> bool:
    """Print the section; ``True`` when the watcher fired exactly once and the run succeeded."""
    print("\nEvent-driven start (analytics_on_source_sync) ...")
    print("  a quiet sandbox (no auto-sync), so only the sync started below can fire")
    log = (demo / "sandbox-events.log").open("w")
    command = [sys.executable, "-m", "airflow_provider_analytics.sandbox", "--port", "0", "--speed", "demo"]
    admin_token = secrets.token_urlsafe(32)  # what the sandbox's control routes take (not an API token)
    sandbox_env = {**env, "ANALYTICS_SANDBOX_ADMIN_TOKEN": admin_token}
    sandbox = subprocess.Popen(
        [*command, "--auto-sync", "0"], stdout=subprocess.PIPE, stderr=log, text=True, env=sandbox_env
    )
    assert sandbox.stdout is not None
    connection = sandbox.stdout.readline().strip()
    saved = os.environ.get("AIRFLOW_CONN_ANALYTICS_DEFAULT")
    os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = connection
    try:
        url = json.loads(connection)["host"]
        store = DictStateStore()
        print("  SIMULATED: the asset state store is a dict here (the triggerer keeps it in Airflow's database)")
        print("  1. the watcher starts, records the current sync as its watermark, then a sync completes:")
        first = asyncio.run(
            watch(as_the_triggerer_builds_it(store), url, 8.0, start_sync=True, admin_token=admin_token)
        )
        print(f"     {len(first)} event(s); watermark stored: {json.dumps(store.values)}")
        print("  2. a triggerer restart: a fresh trigger from the stored kwargs, the same state store:")
        again = asyncio.run(watch(as_the_triggerer_builds_it(store), url, 5.0, start_sync=False))
        print(f"     {len(again)} event(s) after the restart (the sync was already reported)")
        fired = len(first) == 1 and not again
        ran = run_dag(env, connection, demo, first[0] if first else None)
    finally:
        if saved is None:
            os.environ.pop("AIRFLOW_CONN_ANALYTICS_DEFAULT", None)
        else:
            os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = saved
        sandbox.terminate()
        sandbox.wait(timeout=10)
    return fired and ran


def run_dag(env: dict[str, str], connection: str, demo: Path, payload: dict[str, Any] | None) -> bool:
    print("  3. the DAG run for that sync:")
    print("     SIMULATED: `airflow dags test` cannot hand a run asset events, so this is a manual run; its first")
    print("     task reads the source's sync status from the platform, the same one the event carried")
    log_path = demo / "logs" / f"{DAG_ID}-now.log"
    started = time.monotonic()
    with log_path.open("w") as log:
        code = subprocess.run(
            [str(Path(sys.executable).parent / "airflow"), "dags", "test", DAG_ID],
            env={**env, "AIRFLOW_CONN_ANALYTICS_DEFAULT": connection},
            stdout=log,
            stderr=subprocess.STDOUT,
            check=False,
        ).returncode
    shown = log_path.relative_to(ROOT) if log_path.is_relative_to(ROOT) else log_path
    print(f"     {DAG_ID:<34} now  exit {code}  {time.monotonic() - started:5.1f} s  log: {shown}")
    synced = _last_xcom(DAG_ID, "synced")
    same = payload is not None and synced is not None and synced.get("last_synced_at") == payload["last_synced_at"]
    print(f"     the run's sync: {json.dumps(synced)}")
    print(f"     same sync as the event's payload: {same}")
    return code == 0 and same


def _last_xcom(dag_id: str, task_id: str) -> dict[str, Any] | None:
    from airflow.models.dagrun import DagRun
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        run = session.query(DagRun).filter(DagRun.dag_id == dag_id).order_by(DagRun.id.desc()).first()
        if run is None:
            return None
        rows = session.query(XComModel).filter(
            XComModel.dag_id == dag_id, XComModel.run_id == run.run_id, XComModel.task_id == task_id
        )
        # multiple_outputs: one XCom per key of the returned dict (and the dict itself as return_value)
        values = {row.key: row.value for row in rows}
    value = values.get("return_value")
    return value if isinstance(value, dict) else None


def _post(url: str, body: Any, admin_token: str) -> Any:
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {admin_token}"}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())
