"""Shared helpers for report tests: a ready report on the sandbox, its raw download, what landed on disk."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer


def ready_report(
    hook: AnalyticsHook,
    sandbox: SandboxServer,
    *,
    format: str = "pdf",
    name: str | None = None,
    parameters: dict[str, Any] | None = None,
    dashboard_ids: tuple[str, ...] = ("db_sales",),
) -> dict[str, Any]:
    """Generate a report and return it once it reads ``ready`` (the sandbox clock is moved, not slept)."""
    report = hook.generate_report(list(dashboard_ids), format, name=name, parameters=parameters)
    sandbox.state.advance(5)
    deadline = time.monotonic() + 30
    while True:
        current = hook.get_report(report["id"])
        if current["status"] == "ready":
            return dict(current)
        assert current["status"] in ("pending", "generating"), current
        assert time.monotonic() < deadline, f"report never got ready: {current}"
        time.sleep(0.02)  # a large generated CSV renders on a worker thread in real time


def download_requests(sandbox: SandboxServer) -> list[Any]:
    return [entry for entry in sandbox.state.requests if entry.path.endswith("/download")]


def raw_download(sandbox: SandboxServer, report_id: str) -> httpx.Response:
    """The download as the platform sends it, fetched without the provider's code."""
    response = httpx.get(
        f"{sandbox.base_url}/v1/reports/{report_id}/download",
        headers={"Authorization": f"Bearer {sandbox.token}"},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    return response


def files_under(folder: Path) -> list[str]:
    """Every file below ``folder`` (hidden ones too), relative, sorted."""
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())


@contextlib.contextmanager
def advance_after_first_answer(sandbox: SandboxServer, path: str, seconds: float) -> Iterator[None]:
    """Move the sandbox clock ``seconds`` forward once the first request for ``path`` has been answered.

    Makes "the first poll sees the old state, a later one the new" independent of how long a DAG run takes
    to start on a busy machine. The watching thread is joined on exit.
    """
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.01):
            if any(entry.path == path and entry.status for entry in sandbox.state.requests):
                sandbox.state.advance(seconds)
                return

    watcher = threading.Thread(target=watch, name=f"advance after {path}")
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()
