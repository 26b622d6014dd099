"""Each platform call as a span under the task's (or the trigger's) span, read from OpenTelemetry's in-memory
exporter: its name and attributes, its parent, its retries and its failure; and no span where nothing traces.

The parent here is a span the test makes current the way Airflow's task runner and triggerer make theirs
(``start_as_current_span`` around the task's ``execute`` or the trigger's ``run``, 3.2 and later); ``make e2e`` sees
the provider's spans under Airflow's own.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.triggers.executions import ExecutionTrigger
from airflow_provider_analytics.wire.errors import AnalyticsTransportError, NotFoundError
from tests.support.names import JSON_HEADERS, POLL, WORKFLOW
from tests.support.triggers import set_connection, soon

tracer = trace.get_tracer("tests.traces")


def provider_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    """The spans the provider made, in the order they ended."""
    return [
        span
        for span in exporter.get_finished_spans()
        if span.instrumentation_scope is not None and span.instrumentation_scope.name == "airflow_provider_analytics"
    ]


def request_ids(sandbox: SandboxServer, path: str) -> list[str]:
    return [r.request_id for r in sandbox.state.requests if r.path == path]


def test_a_call_is_a_client_span_under_the_tasks_span_with_its_retry_and_request_id(
    sandbox: SandboxServer, hook: AnalyticsHook, spans: InMemorySpanExporter
) -> None:
    sandbox.state.inject(Fault.status(503, path="/v1/charts$", times=1))

    with tracer.start_as_current_span("worker.list_charts") as task_span:
        hook.list_charts()

    [call] = provider_spans(spans)
    assert call.name == "GET /v1/charts"
    assert call.kind == trace.SpanKind.CLIENT
    assert call.parent is not None
    assert call.parent.span_id == task_span.get_span_context().span_id
    assert call.context is not None
    assert call.context.trace_id == task_span.get_span_context().trace_id
    assert dict(call.attributes or {}) == {
        "http.request.method": "GET",
        "url.template": "/v1/charts",
        "http.response.status_code": 200,
        "http.request.resend_count": 1,
        "analytics_platform.conn_id": "analytics_default",
        "analytics_platform.request_id": request_ids(sandbox, "/v1/charts")[-1],
    }
    assert call.status.status_code == trace.StatusCode.UNSET
    # The span covers both attempts and the wait between them.
    assert call.start_time is not None
    assert call.end_time is not None
    assert call.end_time > call.start_time


def test_a_failed_call_is_an_error_span_named_by_its_route_template_never_an_id(
    sandbox: SandboxServer, hook: AnalyticsHook, spans: InMemorySpanExporter
) -> None:
    with tracer.start_as_current_span("worker.get_report"), pytest.raises(NotFoundError):
        hook.get_report("rp_nothere42")

    [call] = provider_spans(spans)  # the probe that told a missing report from a wrong base URL is no call of its own
    assert call.name == "GET /v1/reports/{report_id}"
    attributes = dict(call.attributes or {})
    assert attributes["url.template"] == "/v1/reports/{report_id}"
    assert attributes["http.response.status_code"] == 404
    assert attributes["error.type"] == "NotFoundError"
    assert attributes["analytics_platform.request_id"] == request_ids(sandbox, "/v1/reports/rp_nothere42")[-1]
    assert "http.request.resend_count" not in attributes
    assert call.status.status_code == trace.StatusCode.ERROR
    assert "rp_nothere42" not in repr(dict(attributes)) + call.name
    assert sandbox.token not in repr(dict(attributes))


def test_a_call_that_got_no_answer_has_no_status(
    sandbox: SandboxServer, spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_connection(monkeypatch, sandbox, max_retries=1)
    sandbox.state.inject(Fault.status(503, path="/v1/charts$", times=1))
    sandbox.state.inject(Fault.drop(path="/v1/charts$", times=1))
    hook = AnalyticsHook()

    with tracer.start_as_current_span("worker.list_charts"), pytest.raises(AnalyticsTransportError) as failed:
        hook.list_charts()
    hook.close()

    [call] = provider_spans(spans)
    attributes = dict(call.attributes or {})
    assert "http.response.status_code" not in attributes  # the last attempt's, not the 503 before it
    assert "analytics_platform.request_id" not in attributes
    assert attributes["error.type"] == type(failed.value).__name__
    assert attributes["http.request.resend_count"] == 1


def test_a_triggers_polls_are_spans_under_the_triggers_span(
    sandbox: SandboxServer, hook: AnalyticsHook, spans: InMemorySpanExporter
) -> None:
    execution = hook.execute_workflow(WORKFLOW, {"day": "2026-11-20"})
    path = f"/v1/workflows/{WORKFLOW}/executions/{execution['id']}"
    # The first poll finds it running whatever the machine's speed (a loaded one polled first after it ended).
    running = json.dumps({**execution, "status": "running"})
    sandbox.state.inject(Fault.respond(200, headers=JSON_HEADERS, body=running, method="GET", path=f"{path}$"))
    trigger = ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution["id"], poll_interval=POLL, deadline=soon())

    async def run_in_the_triggerer() -> None:
        with tracer.start_as_current_span("trigger.execute_workflow"):
            [event async for event in trigger.run()]

    with tracer.start_as_current_span("triggerer") as outside:
        pass
    asyncio.run(run_in_the_triggerer())

    every = spans.get_finished_spans()
    [trigger_span] = [span for span in every if span.name == "trigger.execute_workflow"]
    polls = provider_spans(spans)
    assert len(polls) == len(request_ids(sandbox, path)) >= 2
    assert {span.name for span in polls} == {"GET /v1/workflows/{workflow_id}/executions/{execution_id}"}
    assert trigger_span.context is not None
    assert {span.parent.span_id for span in polls if span.parent} == {trigger_span.context.span_id}
    assert len([span for span in polls if span.parent]) == len(polls)
    assert outside.get_span_context().trace_id != trigger_span.context.trace_id
    ids = {dict(span.attributes or {})["analytics_platform.request_id"] for span in polls}
    assert ids == set(request_ids(sandbox, path))


def test_no_span_without_a_recording_span_to_hang_it_on(
    sandbox: SandboxServer, hook: AnalyticsHook, spans: InMemorySpanExporter
) -> None:
    hook.list_charts()  # no task span: as where Airflow does not trace, or on 2.11 to 3.1
    sampled_out = trace.NonRecordingSpan(trace.INVALID_SPAN_CONTEXT)
    with trace.use_span(sampled_out):  # a task span the sampler left out: its calls are left out too
        hook.list_data_sources()

    assert spans.get_finished_spans() == ()
