"""``make e2e``: the event-driven example under the real scheduler and triggerer (docs/events.md).

The e2e sandbox syncs every data source every 5 s by itself, so the watcher of ``analytics_on_source_sync``
fires for those syncs too. The checks hold whatever the auto-syncs do: the sync started here gets exactly
one asset event and one successful run; after a triggerer restart no sync is ever reported twice, and the
syncs that finish afterwards are reported. The DAG is paused again at the end, so its runs stop.
"""

from __future__ import annotations

import signal
from typing import Any

from cluster import Cluster, wait_for
from deployment import Checks, Deployment, expect

DAG_ID = "analytics_on_source_sync"
ASSET = "analytics-warehouse-synced"
SOURCE = "ds_warehouse"


def event_driven_start(deployment: Deployment, checks: Checks) -> None:
    cluster = deployment.cluster
    cluster.api("PATCH", f"/dags/{DAG_ID}", {"is_paused": False})
    try:
        checks.check("a sync starts exactly one asset-triggered run", lambda: _one_run_for_a_sync(deployment))
        checks.check("a triggerer restart repeats no sync", lambda: _restart_repeats_nothing(deployment))
    finally:
        cluster.api("PATCH", f"/dags/{DAG_ID}", {"is_paused": True})


def _events(cluster: Cluster) -> list[dict[str, Any]]:
    path = f"/assets/events?name_pattern={ASSET}&limit=100&order_by=timestamp"
    return list(cluster.api("GET", path)["asset_events"])


def _synced_at(event: dict[str, Any]) -> str:
    return str(event["extra"]["payload"]["last_synced_at"])


def _one_run_for_a_sync(deployment: Deployment) -> str:
    cluster = deployment.cluster
    # A paused DAG's asset has no watcher: it starts once the DAG processor parses the file again. The
    # auto-syncs then fire it, so a first event shows it polls (and has its watermark).
    wait_for("the watcher's first event", lambda: _events(cluster), 180, 2)
    started = cluster.sandbox("POST", f"/_sandbox/data-sources/{SOURCE}/sync", {"outcome": "synced"})
    # Auto-sync ticks are skipped while this sync runs, so the first completion after its start is its own.
    synced_at = wait_for(
        "the sync finishing",
        lambda: _newer(cluster.sandbox("GET", f"/v1/data-sources/{SOURCE}/sync"), started["last_attempt_at"]),
        60,
        0.2,
    )

    def its_events() -> list[dict[str, Any]]:
        return [event for event in _events(cluster) if _synced_at(event) == synced_at]

    wait_for(f"an event for the sync of {synced_at}", its_events, 60, 1)
    [event] = wait_for("a run for it", lambda: [e for e in its_events() if e["created_dagruns"]], 180, 1)
    expect(len(its_events()) == 1, f"the sync of {synced_at} fired {len(its_events())} times")
    [run] = event["created_dagruns"]
    state = deployment.wait_run(DAG_ID, run["run_id"])
    expect(state == "success", f"run {run['run_id']} ended {state}")
    # The run works from the newest sync among its events: this one, or one that came before it started.
    sync = deployment.xcom(DAG_ID, run["run_id"], "synced")
    expect(sync["last_synced_at"] >= synced_at, (sync, synced_at))
    return f"sync of {synced_at}: 1 asset event, run {run['run_id']} {state}"


def _newer(status: dict[str, Any], than: str) -> str | None:
    synced = status.get("last_synced_at")
    return synced if isinstance(synced, str) and synced > than else None  # RFC 3339 UTC strings sort by time


def _restart_repeats_nothing(deployment: Deployment) -> str:
    cluster = deployment.cluster
    before = _events(cluster)
    last = max(_synced_at(event) for event in before)
    cluster.restart("triggerer", signal.SIGTERM)
    wait_for(
        "an event from the restarted triggerer",
        lambda: [event for event in _events(cluster) if _synced_at(event) > last],
        180,
        2,
    )
    events = _events(cluster)
    times = [_synced_at(event) for event in events]
    repeated = sorted({t for t in times if times.count(t) > 1})
    expect(not repeated, f"syncs reported more than once: {repeated}")
    runs = [r["run_id"] for e in events for r in e["created_dagruns"]]
    return f"{len(before)} events before, {len(events) - len(before)} after; {len(set(runs))} runs; none repeated"
