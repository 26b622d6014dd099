"""A chart exported to a file logs its progress in rows while it runs, and a final line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

import pytest

from airflow_provider_analytics.operators.charts import GetChartDataOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.context import make_context


class EveryRowProgress(GetChartDataOperator):
    """The operator with no interval between progress lines, so a test's short export logs some."""

    progress_interval: ClassVar[float] = 0.0


def logged(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> str:
    """What the task logged: Airflow 3.1+ logs through structlog to stdout, earlier through logging."""
    return capsys.readouterr().out + "\n".join(record.getMessage() for record in caplog.records)


def test_a_long_export_logs_rows_rate_and_a_final_line(
    sandbox: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO")
    target = tmp_path / "rows.csv"
    op = EveryRowProgress(task_id="t", chart_id="ch_revenue", destination=str(target), page_size=5)
    result = op.execute(make_context())
    text = logged(capsys, caplog)
    assert result["rows"] > 1
    assert re.search(rf"chart ch_revenue to {re.escape(str(target))}: 1 row after \d+ s, [\d,]+ rows/s", text), text
    assert f"chart ch_revenue to {target}: finished, {result['rows']:,} rows in " in text
