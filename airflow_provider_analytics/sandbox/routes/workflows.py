"""``/v1/workflows``: list and create workflows, execute them, read and cancel executions."""

from __future__ import annotations

import json

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse

from airflow_provider_analytics.sandbox.domain import lifecycle
from airflow_provider_analytics.sandbox.domain.api_error import ApiError
from airflow_provider_analytics.sandbox.domain.pagination import paginate
from airflow_provider_analytics.sandbox.domain.records import ExecutionRecord, WorkflowRecord, Workspace, new_id
from airflow_provider_analytics.sandbox.domain.store import SandboxState
from airflow_provider_analytics.sandbox.routes.schemas import ExecuteWorkflowBody
from airflow_provider_analytics.sandbox.routes.support import json_response, query_of, read_json, workspace_of
from airflow_provider_analytics.wire._request_bodies import CreateWorkflowBody


def _workflow(workspace: Workspace, workflow_id: str) -> WorkflowRecord:
    workflow = workspace.workflows.get(workflow_id)
    if workflow is None:
        raise ApiError.not_found("workflow", workflow_id)
    return workflow


def _execution(workspace: Workspace, workflow_id: str, execution_id: str) -> ExecutionRecord:
    _workflow(workspace, workflow_id)
    execution = workspace.executions.get(execution_id)
    if execution is None or execution.workflow_id != workflow_id:
        raise ApiError.not_found("execution", execution_id)
    return execution


def build_router(state: SandboxState) -> APIRouter:
    """Routes for workflows and executions.

    :param state: the sandbox state.
    """
    router = APIRouter(prefix="/v1/workflows")

    @router.get("")
    async def list_workflows(request: Request) -> JSONResponse:
        with state.lock:
            workspace = workspace_of(state, request)
            items = list(workspace.workflows.values())
            page, next_cursor = paginate(items, f"{workspace.id}/workflows", query_of(request), state.cursors)
            return json_response({"data": [workflow.as_json() for workflow in page], "next_cursor": next_cursor})

    @router.post("")
    async def create_workflow(request: Request) -> JSONResponse:
        body = await read_json(request, CreateWorkflowBody)
        with state.lock:
            workspace = workspace_of(state, request)
            now = state.now()
            workflow = WorkflowRecord(new_id("wf"), body.name, body.description or "", body.configuration, now, now)
            workspace.workflows[workflow.id] = workflow
            return json_response(workflow.as_json(), status=201)

    @router.post("/{workflow_id}/execute")
    async def execute_workflow(workflow_id: str, request: Request) -> JSONResponse:
        body = await read_json(request, ExecuteWorkflowBody, optional=True)
        inputs = body.inputs or {}
        with state.lock:
            workspace = workspace_of(state, request)
            workflow = _workflow(workspace, workflow_id)
            outcome, error = state.execution_outcome(workflow)
            canonical_inputs = json.dumps(inputs, sort_keys=True, separators=(",", ":"))
            outputs = lifecycle.execution_outputs(workflow, inputs, canonical_inputs)
            now = state.now()
            execution = ExecutionRecord(
                new_id("ex"), workflow.id, inputs, now, outcome, outputs, error, duration=state.chaos.work_seconds()
            )
            workspace.executions[execution.id] = execution
            return json_response(lifecycle.execution_view(execution, state.timings, now), status=202)

    @router.get("/{workflow_id}/executions/{execution_id}")
    async def get_execution(workflow_id: str, execution_id: str, request: Request) -> JSONResponse:
        with state.lock:
            execution = _execution(workspace_of(state, request), workflow_id, execution_id)
            return json_response(lifecycle.execution_view(execution, state.timings, state.now()))

    @router.post("/{workflow_id}/executions/{execution_id}/cancel")
    async def cancel_execution(workflow_id: str, execution_id: str, request: Request) -> JSONResponse:
        with state.lock:
            execution = _execution(workspace_of(state, request), workflow_id, execution_id)
            now = state.now()
            status = lifecycle.execution_view(execution, state.timings, now)["status"]
            if status in lifecycle.EXECUTION_TERMINAL:
                raise ApiError(409, f"execution {execution_id} already finished ({status})", {"status": status})
            execution.cancelled_at = now
            return json_response(lifecycle.execution_view(execution, state.timings, now), status=202)

    return router
