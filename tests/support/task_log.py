"""What a task logged inside a block, with each line's level: ``caplog`` where Airflow logs through ``logging``
(2.11, and the triggers of 3.0), structlog's own capture where it logs through structlog (a task's and a
trigger's logger from 3.0 on print to stdout, at INFO and above unless told otherwise).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

__all__ = ["LogLines", "task_log"]

LogLines = list[tuple[str, str]]


@contextmanager
def task_log(caplog: pytest.LogCaptureFixture) -> Iterator[LogLines]:
    """``(level, message)`` of every line logged at DEBUG and above inside the block, filled when it ends."""
    lines: LogLines = []
    # caplog holds the whole test's records: only those logged inside the block count (on 2.11 and 3.0 a task's
    # logger goes through logging, so a line logged before the block would otherwise be counted as inside it).
    before = len(caplog.records)
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="airflow.task")
    try:
        structlog: Any = importlib.import_module("structlog")
    except ImportError:  # Airflow 2.11 logs through logging alone
        structlog = None
    saved: dict[str, Any] = structlog.get_config() if structlog is not None else {}
    capture: Any = None
    if structlog is not None:
        capture = importlib.import_module("structlog.testing").LogCapture()
        # Airflow's own structlog set-up filters below INFO: record every level, print nothing.
        structlog.configure(processors=[capture], wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    try:
        yield lines
    finally:
        if structlog is not None:
            structlog.configure(**saved)
            lines.extend((str(entry["log_level"]), str(entry["event"])) for entry in capture.entries)
        lines.extend((record.levelname.lower(), record.getMessage()) for record in caplog.records[before:])
