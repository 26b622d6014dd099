"""Helpers of the definitions tests: definitions to apply, the request log, out-of-band changes, files."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.sandbox.domain.config import DEFAULT_WORKSPACE
from airflow_provider_analytics.sandbox.domain.records import WorkflowRecord, Workspace
from airflow_provider_analytics.sandbox.server import SandboxServer

# Written as a password would be: it must never show up in a plan, a table, a log line or the request log.
PASSWORD = "hunter2-Zq81-never-show"
SEED = "analytics_definitions.apply.run_1"


def definitions() -> dict[str, Any]:
    """A fresh copy of the definitions most tests apply: one of each kind, charts by name on a new data source."""
    return copy.deepcopy(
        {
            "data_sources": [
                {
                    "name": "warehouse-v2",
                    "type": "postgres",
                    "connection": {
                        "host": "db",
                        "port": 5432,
                        "database": "sales",
                        "user": "svc",
                        "password": PASSWORD,
                    },
                }
            ],
            "charts": [
                {
                    "name": "Revenue",
                    "type": "line",
                    "data_source": "warehouse-v2",
                    "query": "select day, revenue from sales",
                    "options": {"stacked": False, "colors": ["#123456"]},
                },
                {"name": "Orders", "type": "bar", "data_source": "warehouse-v2", "query": "select region, orders"},
            ],
            "dashboards": [
                {
                    "name": "Sales",
                    "description": "Daily sales",
                    "tags": ["finance", "daily"],
                    "layout": [
                        {"chart": "Revenue", "x": 0, "y": 0, "w": 6, "h": 4},
                        {"chart": "Orders", "x": 6, "y": 0, "w": 6, "h": 4},
                    ],
                }
            ],
            "workflows": [{"name": "enrich-sales", "configuration": {"steps": [{"name": "extract"}]}}],
        }
    )


def workspace(sandbox: SandboxServer) -> Workspace:
    """The default workspace's records, to change the platform out of band (as its UI would); hold the lock."""
    return sandbox.state.workspace(DEFAULT_WORKSPACE)


def sent(sandbox: SandboxServer, since: int = 0) -> list[tuple[str, str]]:
    """``(method, path)`` of every request since the ``since``-th."""
    return [(entry.method, entry.path) for entry in sandbox.state.requests[since:]]


def writes(sandbox: SandboxServer, since: int = 0) -> list[Any]:
    """The requests other than GET since the ``since``-th."""
    return [entry for entry in sandbox.state.requests[since:] if entry.method != "GET"]


READS = [("GET", "/v1/data-sources"), ("GET", "/v1/charts"), ("GET", "/v1/dashboards"), ("GET", "/v1/workflows")]
# The writes of applying ``definitions()`` to an empty workspace, in dependency order.
CREATES = [
    ("POST", "/v1/data-sources"),
    ("POST", "/v1/charts"),
    ("POST", "/v1/charts"),
    ("POST", "/v1/dashboards"),
    ("POST", "/v1/workflows"),
]


def actions(plan: Any) -> list[tuple[str, str, str]]:
    """``(kind, name, action)`` of every change of a plan, leaving out the objects no definition names."""
    return [(change.kind, change.name, change.action) for change in plan.changes if change.action != "not_managed"]


def logged(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> str:
    """What the hook logged, each line once: Airflow 3.1+ logs through structlog to stdout, earlier releases
    through logging, which Airflow 2.11 also prints to stdout (a record already printed is not added again)."""
    out = capsys.readouterr().out
    records = [record.getMessage() for record in caplog.records]
    return "\n".join([out, *(message for message in records if message not in out)])


def write_file(folder: Path, name: str, document: Any) -> Path:
    """``document`` written as JSON (``.json``) or YAML (``.yaml``/``.yml``) to ``folder/name``."""
    import yaml  # type: ignore[import-untyped]  # PyYAML ships no type information

    path = folder / name
    text = json.dumps(document) if name.endswith(".json") else yaml.safe_dump(document, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path


def add_workflows(sandbox: SandboxServer, count: int) -> None:
    """``count`` more workflows on the platform, added out of band."""
    with sandbox.state.lock:
        records = workspace(sandbox)
        now = sandbox.state.now()
        for number in range(count):
            when = now - timedelta(minutes=number)
            records.workflows[f"wf_bulk_{number}"] = WorkflowRecord(
                f"wf_bulk_{number}", f"bulk-{number}", "", {"steps": []}, when, when
            )
