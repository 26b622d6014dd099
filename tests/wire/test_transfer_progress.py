"""Progress of long transfers: a line every interval (driven by a fake clock), and real lines on a slow stream."""

from __future__ import annotations

import io
import logging
from typing import Any

import pytest

from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire._download import ReportStream
from airflow_provider_analytics.wire._progress import PROGRESS_INTERVAL, TransferProgress
from airflow_provider_analytics.wire.client import AnalyticsClient
from tests.support.fixtures import make_config

MIB = 1024 * 1024


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Lines:
    """Collects the lines a :class:`TransferProgress` logs, formatted."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, msg: Any, /, *args: Any) -> None:
        self.lines.append(msg % args)


def progress(total: int | None = None, unit: Any = "bytes") -> tuple[TransferProgress, Clock, Lines]:
    clock, lines = Clock(), Lines()
    return TransferProgress("report rp_1", unit, total=total, log=lines, clock=clock), clock, lines


def test_a_transfer_within_one_interval_logs_nothing() -> None:
    meter, clock, lines = progress(total=90 * MIB)
    for done in range(0, 90 * MIB, MIB):
        clock.now += 0.1
        meter.update(done)
    meter.finish(90 * MIB)
    assert lines.lines == []


def test_a_long_download_logs_amount_percent_rate_and_time_left_every_interval() -> None:
    meter, clock, lines = progress(total=227 * MIB)
    done = 0
    while done < 227 * MIB:  # 64 KiB chunks at 4 MiB/s: thousands of chunks, a line each 10 s
        clock.now += 1 / 64
        done += 64 * 1024
        meter.update(done)
    meter.finish(done)
    assert len(lines.lines) == 227 // 40 + 1  # 56.75 s: five lines, then the final one
    assert lines.lines[0] == "report rp_1: 40.0 MiB of 227.0 MiB (17.6 %) after 10 s, 4.0 MiB/s, about 47 s left"
    assert lines.lines[1].startswith("report rp_1: 80.0 MiB of 227.0 MiB (35.2 %) after 20 s, 4.0 MiB/s")
    assert lines.lines[-1] == "report rp_1: finished, 227.0 MiB in 57 s (4.0 MiB/s)"


def test_a_stalled_transfer_logs_one_line_per_interval_not_a_burst() -> None:
    meter, clock, lines = progress(total=100)
    clock.now += 95  # nothing arrived for 95 s
    meter.update(10)
    meter.update(11)
    clock.now += PROGRESS_INTERVAL - 1
    meter.update(12)
    assert lines.lines == ["report rp_1: 10 B of 100 B (10.0 %) after 1 min 35 s, 0 B/s, about 14 min 15 s left"]


def test_rows_of_unknown_total_log_count_and_rate() -> None:
    meter, clock, lines = progress(unit="rows")
    clock.now += 12
    meter.update(120_000)
    meter.finish(150_000)
    assert lines.lines[0] == "report rp_1: 120,000 rows after 12 s, 10,000 rows/s"
    assert lines.lines[1] == "report rp_1: finished, 150,000 rows in 12 s (12,500 rows/s)"


def test_a_slow_download_over_a_real_socket_logs_progress_lines(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    # 20 chunks of 1 KiB, a pause before each: the download takes a second or more, lines come every 0.1 s.
    chunk, count = b"x" * 1024, 20
    sandbox.state.inject(
        Fault.stream(
            headers={"Content-Type": "text/csv"},
            chunk=chunk,
            chunk_count=count,
            interval=0.05,
            content_length=len(chunk) * count,
            path="/download$",
        )
    )
    caplog.set_level(logging.INFO, logger="airflow_provider_analytics.wire")
    out = io.BytesIO()
    with AnalyticsClient(make_config(sandbox)) as client, ReportStream(client, "rp_slow") as stream:
        meter = TransferProgress("report rp_slow", total=stream.size, interval=0.1)
        downloaded = stream.copy_to(out, progress=meter)
    assert downloaded.size == len(chunk) * count == len(out.getvalue())
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("report rp_slow: ")]
    assert meter.lines >= 1
    assert len(lines) == meter.lines + 1
    assert " of 20.0 KiB (" in lines[0]
    assert "left" in lines[0]
    assert lines[-1].startswith("report rp_slow: finished, 20.0 KiB in ")
