"""The traces tests' fixture: OpenTelemetry's in-memory exporter behind the process's tracer provider.

OpenTelemetry lets a process set its global tracer provider once; Airflow sets it only where ``[traces] otel_on``
(3.2 and later, when a task runner or the triggerer starts). The tests' processes never turn that on, so the
first test here sets an SDK provider whose one processor hands each ended span to an in-memory exporter, and each
test starts from an empty exporter.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@functools.cache
def _exporter() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The exporter every span of this process ends in, emptied before and after the test."""
    exporter = _exporter()
    exporter.clear()
    yield exporter
    exporter.clear()
