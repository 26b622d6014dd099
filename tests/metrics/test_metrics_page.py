"""docs/metrics.md keeps up with the code: every metric the provider emits, and every attribute its spans carry,
has its row, and no row names one it does not emit (the names are read from ``hooks/_metrics.py``'s and
``hooks/_traces.py``'s sources, without importing Airflow)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "airflow_provider_analytics" / "hooks" / "_metrics.py"
TRACES = ROOT / "airflow_provider_analytics" / "hooks" / "_traces.py"
PAGE = ROOT / "docs" / "metrics.md"


def test_every_emitted_metric_has_its_row_and_every_row_is_emitted() -> None:
    emitted = set(re.findall(r'f"\{PREFIX\}([\w.]+)"', SOURCE.read_text()))
    metrics, _ = PAGE.read_text().split("\n## Traces\n")
    rows = set(re.findall(r"^\| `analytics_platform\.([\w.]+)` \|", metrics, flags=re.MULTILINE))

    assert len(emitted) == 12
    assert rows == emitted


def test_every_span_attribute_has_its_row_and_every_row_is_set() -> None:
    source = TRACES.read_text()
    set_ = set(re.findall(r'"((?:http|url|error)\.[\w.]+)"', source))
    set_ |= {f"analytics_platform.{name}" for name in re.findall(r'\{ATTRIBUTE_PREFIX\}(\w+)"', source)}
    _, traces = PAGE.read_text().split("\n## Traces\n")
    rows = set(re.findall(r"^\| `([\w.]+)` \|", traces, flags=re.MULTILINE))

    assert len(set_) == 7
    assert rows == set_


def test_the_page_is_in_the_site() -> None:
    index = (ROOT / "docs" / "index.md").read_text()

    assert "\nmetrics\n" in index
