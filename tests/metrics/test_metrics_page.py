"""docs/metrics.md keeps up with the code: every metric the provider emits has its row, and no row names one it
does not emit (the names are read from ``hooks/_metrics.py``'s source, without importing Airflow)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "airflow_provider_analytics" / "hooks" / "_metrics.py"
PAGE = ROOT / "docs" / "metrics.md"


def test_every_emitted_metric_has_its_row_and_every_row_is_emitted() -> None:
    emitted = set(re.findall(r'f"\{PREFIX\}([\w.]+)"', SOURCE.read_text()))
    rows = set(re.findall(r"^\| `analytics_platform\.([\w.]+)` \|", PAGE.read_text(), flags=re.MULTILINE))

    assert len(emitted) == 11
    assert rows == emitted


def test_the_page_is_in_the_site() -> None:
    index = (ROOT / "docs" / "index.md").read_text()

    assert "\nmetrics\n" in index
