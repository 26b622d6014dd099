"""``/ui/...``: minimal HTML pages so that the provider's "extra links" open something real."""

from __future__ import annotations

import html
import json
from typing import Any

from fastapi import APIRouter
from starlette.responses import HTMLResponse

from airflow_provider_analytics.sandbox.domain.redaction import redact_for_display
from airflow_provider_analytics.sandbox.domain.store import SandboxState


def _page(title: str, resource: Any, status: int = 200) -> HTMLResponse:
    # The pages need no token: a secret the platform kept (a DSN's password, a key in a nested field, a workflow's
    # api_token) must not show on them.
    shown = redact_for_display(resource)
    body = html.escape(json.dumps(shown, indent=2)) if resource is not None else "Not found."
    return HTMLResponse(
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)} - Analytics sandbox</title></head><body>"
        f"<p><a href='/ui'>Analytics sandbox</a></p><h1>{html.escape(title)}</h1><pre>{body}</pre></body></html>",
        status_code=status,
    )


def _find(items: list[dict[str, Any]], resource_id: str) -> dict[str, Any] | None:
    return next((item for item in items if item.get("id") == resource_id), None)


def build_router(state: SandboxState) -> APIRouter:
    """HTML pages for workflows, executions, reports, dashboards, charts and data sources (any workspace).

    :param state: the sandbox state.
    """
    router = APIRouter(prefix="/ui")

    def show(kind: str, items: list[dict[str, Any]], resource_id: str) -> HTMLResponse:
        resource = _find(items, resource_id)
        return _page(f"{kind} {resource_id}", resource, status=200 if resource is not None else 404)

    @router.get("")
    async def index() -> HTMLResponse:
        links = []
        for kind, path, items in (
            ("Workflows", "workflows", state.workflows()),
            ("Dashboards", "dashboards", state.dashboards()),
            ("Reports", "reports", state.reports()),
            ("Charts", "charts", state.charts()),
            ("Data sources", "data-sources", state.data_sources()),
        ):
            entries = "".join(
                f"<li><a href='/ui/{path}/{html.escape(item['id'])}'>{html.escape(str(item.get('name')))}</a></li>"
                for item in items
            )
            links.append(f"<h2>{kind}</h2><ul>{entries}</ul>")
        executions = "".join(
            f"<li><a href='/ui/workflows/{html.escape(e['workflow_id'])}/executions/{html.escape(e['id'])}'>"
            f"{html.escape(e['id'])}</a> ({html.escape(e['status'])})</li>"
            for e in state.executions()
        )
        return HTMLResponse(
            "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Analytics sandbox</title></head>"
            f"<body><h1>Analytics sandbox</h1>{''.join(links)}<h2>Executions</h2><ul>{executions}</ul></body></html>"
        )

    @router.get("/workflows/{workflow_id}/executions/{execution_id}")
    async def execution(workflow_id: str, execution_id: str) -> HTMLResponse:
        items = [e for e in state.executions() if e["workflow_id"] == workflow_id]
        return show("Execution", items, execution_id)

    @router.get("/workflows/{workflow_id}")
    async def workflow(workflow_id: str) -> HTMLResponse:
        return show("Workflow", state.workflows(), workflow_id)

    @router.get("/reports/{report_id}")
    async def report(report_id: str) -> HTMLResponse:
        return show("Report", state.reports(), report_id)

    @router.get("/dashboards/{dashboard_id}")
    async def dashboard(dashboard_id: str) -> HTMLResponse:
        return show("Dashboard", state.dashboards(), dashboard_id)

    @router.get("/charts/{chart_id}")
    async def chart(chart_id: str) -> HTMLResponse:
        return show("Chart", state.charts(), chart_id)

    @router.get("/data-sources/{data_source_id}")
    async def data_source(data_source_id: str) -> HTMLResponse:
        return show("Data source", state.data_sources(), data_source_id)

    return router
