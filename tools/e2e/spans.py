"""``make e2e``'s traces: an OTLP/HTTP receiver on loopback, and the check that the provider's spans hang under
Airflow's own.

Airflow 3.2 and later run each task (``worker.<task_id>``) and each trigger (``trigger.<task_id>``) under a span
of their own when ``[traces] otel_on``; 3.3 sends spans where OpenTelemetry's environment says
(``OTEL_TRACES_EXPORTER``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``). The cluster points every Airflow process at
:class:`SpanReceiver`, a real OTLP/HTTP endpoint that decodes each export request with OpenTelemetry's own
protobuf classes, and :func:`check_calls_under_airflows_spans` asserts on what arrived.
"""

from __future__ import annotations

import gzip
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

PROVIDER_SCOPE = "airflow_provider_analytics"
MAX_EXPORT_BYTES = 16 * 1024 * 1024
# A call's span is named by its method and route template: never an id.
CALL_NAME = re.compile(r"(GET|POST|PUT) /v1(/[a-z-]+|/\{[a-z_]+\})+")


@dataclass(frozen=True)
class Span:
    """One exported span, as the checks read it."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    scope: str
    attributes: dict[str, Any]


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class SpanReceiver:
    """An OTLP/HTTP traces endpoint on 127.0.0.1 (``POST /v1/traces``, protobuf), in a thread until :meth:`stop`."""

    def __init__(self) -> None:
        self._spans: list[Span] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if self.path != "/v1/traces" or not 0 < length <= MAX_EXPORT_BYTES:
                    self.send_error(400)
                    return
                body = self.rfile.read(length)
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                receiver._add(ExportTraceServiceRequest.FromString(body))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-receiver", daemon=True)

    @property
    def endpoint(self) -> str:
        """What ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` names."""
        return f"http://127.0.0.1:{self.port}/v1/traces"

    def start(self) -> SpanReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, join the thread and close the socket."""
        self._server.shutdown()
        self._thread.join(10)
        self._server.server_close()

    def spans(self) -> list[Span]:
        """Every span received so far."""
        with self._lock:
            return list(self._spans)

    def _add(self, request: ExportTraceServiceRequest) -> None:
        spans = [
            Span(
                span.trace_id.hex(),
                span.span_id.hex(),
                span.parent_span_id.hex(),
                span.name,
                scope_spans.scope.name,
                {attribute.key: _value(attribute.value) for attribute in span.attributes},
            )
            for resource_spans in request.resource_spans
            for scope_spans in resource_spans.scope_spans
            for span in scope_spans.spans
        ]
        with self._lock:
            self._spans += spans


def task_span_of(span: Span, every: dict[tuple[str, str], Span]) -> Span | None:
    """The nearest ancestor of ``span`` that is Airflow's span of a task (``worker.*``) or a trigger
    (``trigger.*``), through Airflow's own spans between them (3.3's ``resumable_job.resume_decision``)."""
    key = (span.trace_id, span.parent_span_id)
    for _ in range(20):
        parent = every.get(key)
        if parent is None:
            return None
        if parent.scope != PROVIDER_SCOPE and parent.name.startswith(("worker.", "trigger.")):
            return parent
        key = (parent.trace_id, parent.parent_span_id)
    return None


def check_calls_under_airflows_spans(spans: list[Span], dag_ids: list[str], request_ids: set[str]) -> str:
    """Assert that, in the traces of the DAGs' task runs, every call's span hangs under Airflow's span of its task
    (``worker.<task_id>``) or of its trigger (``trigger.<task_id>``), is named by a route template and carries a
    request id the sandbox handed out, and that both kinds of parent occur; return the check's detail.

    :param spans: what the receiver got.
    :param dag_ids: DAGs whose runs all ended (a task runner that was killed never exported its own span).
    :param request_ids: every ``X-Request-Id`` in the sandbox's request log.
    """
    every = {(span.trace_id, span.span_id): span for span in spans}
    traces = {
        span.trace_id
        for span in spans
        if span.name.startswith(("worker.", "trigger.")) and span.attributes.get("airflow.dag_id") in dag_ids
    }
    calls = [span for span in spans if span.scope == PROVIDER_SCOPE and span.trace_id in traces]
    if not calls:
        seen = sorted({span.name for span in spans if span.scope != PROVIDER_SCOPE})[:20]
        raise AssertionError(f"no call's span in the traces of {dag_ids}; Airflow's spans seen: {seen}")
    owners = [task_span_of(span, every) for span in calls]
    orphans = [
        (span.name, getattr(every.get((span.trace_id, span.parent_span_id)), "name", "(parent not received)"))
        for span, owner in zip(calls, owners, strict=True)
        if owner is None
    ]
    if orphans:
        raise AssertionError(f"{len(orphans)} calls under no task's or trigger's span (call, parent): {orphans[:5]}")
    bad_names = sorted({span.name for span in calls if not CALL_NAME.fullmatch(span.name)})
    if bad_names:
        raise AssertionError(f"span names that are not a method and a route template: {bad_names}")
    unknown = [span.attributes.get("analytics_platform.request_id") for span in calls]
    unknown = [request_id for request_id in unknown if request_id not in request_ids]
    if unknown:
        raise AssertionError(f"request ids the sandbox never handed out: {unknown[:5]}")
    kinds = [owner.name.split(".")[0] for owner in owners if owner is not None]
    if set(kinds) != {"worker", "trigger"}:
        raise AssertionError(f"calls only under {set(kinds)} spans: a worker's and a trigger's were expected")
    through = sum(
        1 for span, owner in zip(calls, owners, strict=True) if owner and owner.span_id != span.parent_span_id
    )
    return (
        f"{kinds.count('worker')} calls under worker.*, {kinds.count('trigger')} under trigger.* spans "
        f"({through} through Airflow's own spans between)"
    )
