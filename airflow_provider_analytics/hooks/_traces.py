"""Each call of the platform as an OpenTelemetry span under the task's (or the trigger's) span, where Airflow traces.

Airflow 3.2 and later run each task, on its worker, and each trigger, in the triggerer, under a span of their own
made through OpenTelemetry's global API (``[traces] otel_on``). The wire layer reports each call once it ended
(``wire/_observer.py``'s :class:`~airflow_provider_analytics.wire._observer.CallRecord`); :func:`trace_call` makes
it a client span, a child of the span current where the call ran, from its start to now.

A span is made only under a span that records. That is Airflow's own choice made once per task: where traces are
off, or the task's span was not sampled, or the release makes none (2.11 to 3.1 record theirs elsewhere, after the
fact), a call costs one dictionary lookup, or a context lookup where OpenTelemetry is loaded, and no span. The
provider never loads OpenTelemetry itself (``opentelemetry-api`` is declared, but Airflow requires it anyway): a
process that did not load it has no span a call could belong to.

Names and attributes follow OpenTelemetry's conventions for HTTP clients: the span is ``GET /v1/reports/{report_id}``
(the route's template, never an id), with ``http.request.method``, ``url.template``, ``http.response.status_code``,
``http.request.resend_count`` and ``error.type``; the platform's request id and the connection id under
``analytics_platform.`` (docs/metrics.md, "Traces").
"""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics import __version__
from airflow_provider_analytics.wire._observer import CallRecord

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

__all__ = ["ATTRIBUTE_PREFIX", "trace_call"]

# The provider's own attributes (the platform's request id, the connection) start with this, as its metrics do.
ATTRIBUTE_PREFIX = "analytics_platform."
TRACER_NAME = "airflow_provider_analytics"


@functools.cache
def _tracer() -> Tracer:
    """The provider's tracer: a proxy until Airflow sets the process's tracer provider, then that provider's."""
    from opentelemetry import trace

    return trace.get_tracer(TRACER_NAME, __version__)


def trace_call(call: CallRecord) -> None:
    """Record ``call`` as a client span under the current span, if that span records; else do nothing.

    :param call: the call, ended just now.
    """
    if "opentelemetry.trace" not in sys.modules:  # nothing in this process traces: no span is current
        return
    from opentelemetry import trace

    if not trace.get_current_span().is_recording():
        return
    attributes: dict[str, Any] = {
        "http.request.method": call.method,
        "url.template": call.route,
        f"{ATTRIBUTE_PREFIX}conn_id": call.account,
    }
    if call.status is not None:
        attributes["http.response.status_code"] = call.status
    if call.attempts > 1:
        attributes["http.request.resend_count"] = call.attempts - 1
    if call.request_id is not None:
        attributes[f"{ATTRIBUTE_PREFIX}request_id"] = call.request_id
    if call.error is not None:
        attributes["error.type"] = call.error
    span = _tracer().start_span(
        f"{call.method} {call.route}", kind=trace.SpanKind.CLIENT, attributes=attributes, start_time=call.started_ns
    )
    if call.error is not None:
        span.set_status(trace.Status(trace.StatusCode.ERROR, call.error))
    span.end()
