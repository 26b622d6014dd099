"""Deterministic, plausible chart data derived from a chart's query.

The same chart always yields the same rows, so paging through it (or rendering it into a report
twice) gives identical results, and tests can predict the shape of the data.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

_SELECT_LIST = re.compile(r"^\s*select\s+(?:distinct\s+)?(?P<items>.+?)\s+from\s", re.IGNORECASE | re.DOTALL)
_ALIAS = re.compile(r"\s+as\s+(?P<alias>[A-Za-z_][A-Za-z0-9_]*)\s*$", re.IGNORECASE)
_IDENTIFIER = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*\.)*(?P<name>[A-Za-z_][A-Za-z0-9_]*)$")
_DATE_HINTS = ("day", "date", "week", "month", "_at", "time", "period")
_TEXT_HINTS = (
    "name", "region", "country", "city", "category", "channel", "segment", "source", "campaign",
    "product", "plan", "status", "team", "device", "label", "id",
)  # fmt: skip
_WORDS = {
    "region": ["EMEA", "North America", "LATAM", "APAC"],
    "country": ["Germany", "France", "United States", "Brazil", "Japan", "India"],
    "channel": ["organic", "paid search", "email", "social", "referral"],
    "plan": ["free", "starter", "team", "enterprise"],
    "device": ["desktop", "mobile", "tablet"],
}
_DEFAULT_WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
DEFAULT_COLUMNS = ("day", "value")
FIRST_DAY = date(2026, 1, 1)


@dataclass(frozen=True)
class Column:
    """One column of chart data; ``type`` is ``date``, ``string`` or ``number``."""

    name: str
    type: str

    def as_json(self) -> dict[str, str]:
        """The column as the API renders it."""
        return {"name": self.name, "type": self.type}


def _split_top_level(items: str) -> list[str]:
    """Split a select list on commas that are not inside parentheses."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in items:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def _column_type(name: str) -> str:
    lowered = name.lower()
    if any(hint in lowered for hint in _DATE_HINTS):
        return "date"
    if any(lowered == hint or lowered.endswith(f"_{hint}") for hint in _TEXT_HINTS):
        return "string"
    return "number"


def columns_for_query(query: str) -> list[Column]:
    """The columns a query returns: its select list when parseable, else ``day, value``.

    :param query: the chart's SQL-ish query text.
    """
    match = _SELECT_LIST.match(query)
    names: list[str] = []
    if match:
        for position, item in enumerate(_split_top_level(match.group("items")), start=1):
            alias = _ALIAS.search(item)
            identifier = _IDENTIFIER.match(item)
            if alias:
                names.append(alias.group("alias"))
            elif identifier:
                names.append(identifier.group("name"))
            elif item != "*":
                names.append(f"column_{position}")
    if not names:
        names = list(DEFAULT_COLUMNS)
    unique = list(dict.fromkeys(names))
    return [Column(name, _column_type(name)) for name in unique]


def _noise(seed: str, column: str, row: int) -> int:
    return zlib.crc32(f"{seed}|{column}|{row}".encode())


def cell_value(seed: str, column: Column, row: int) -> Any:
    """The value of one cell: dates walk forward day by day, numbers trend upward with noise.

    :param seed: what makes two charts' data differ (the chart id).
    :param column: the column.
    :param row: the zero-based row index.
    """
    if column.type == "date":
        return (FIRST_DAY + timedelta(days=row)).isoformat()
    noise = _noise(seed, column.name, row)
    if column.type == "string":
        words = next((w for key, w in _WORDS.items() if key in column.name.lower()), _DEFAULT_WORDS)
        if column.name.lower().endswith("id"):
            return f"{column.name.lower().removesuffix('_id')[:3] or 'id'}_{row + 1:05d}"
        return words[noise % len(words)]
    base = 1000 + (zlib.crc32(f"{seed}|{column.name}".encode()) % 9000)
    return round(base + row * 3.5 + (noise % 1000) / 10, 2)


def chart_rows(seed: str, columns: list[Column], start: int, stop: int) -> list[list[Any]]:
    """Rows ``start`` to ``stop - 1`` of a chart's data.

    :param seed: the chart id.
    :param columns: the chart's columns.
    :param start: first row index, inclusive.
    :param stop: last row index, exclusive.
    """
    return [[cell_value(seed, column, row) for column in columns] for row in range(start, stop)]
