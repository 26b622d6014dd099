"""Report files: real, openable PDF, CSV, XLSX and HTML renderings of dashboards' chart data."""

from __future__ import annotations

import csv
import html
import io
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from airflow_provider_analytics.sandbox.domain.chart_data import FIRST_DAY, Column

_PDF_TOP = 800
_PDF_BOTTOM = 50
_PDF_SAMPLE_ROWS = 8
_CSV_CHUNK_ROWS = 50_000
_REGIONS = ("EMEA", "North America", "LATAM", "APAC")
_CHANNELS = ("organic", "paid search", "email", "social", "referral")
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass(frozen=True)
class ChartSnapshot:
    """A chart's data as it was when the report was requested."""

    name: str
    type: str
    columns: list[Column]
    rows: list[list[Any]]


@dataclass(frozen=True)
class DashboardSnapshot:
    """A dashboard and its charts as they were when the report was requested."""

    name: str
    charts: list[ChartSnapshot]


@dataclass(frozen=True)
class ReportSnapshot:
    """Everything needed to render a report file without touching the store.

    :param name: the report name.
    :param generated_at: RFC 3339 time printed in the file.
    :param dashboards: the dashboards, with chart data.
    :param generated_rows: for CSV load tests: render this many generated rows instead of chart data.
    """

    name: str
    generated_at: str
    dashboards: list[DashboardSnapshot]
    generated_rows: int | None = None


def render_report(snapshot: ReportSnapshot, file_format: str) -> bytes:
    """Render a report file.

    :param snapshot: the report content.
    :param file_format: one of ``pdf csv xlsx html``.
    """
    renderers = {"pdf": render_pdf, "csv": render_csv, "xlsx": render_xlsx, "html": render_html}
    return renderers[file_format](snapshot)


def _table(snapshot: ReportSnapshot) -> tuple[list[str], Iterator[list[Any]]]:
    """One wide table of every chart's rows: dashboard, chart, then the union of all columns."""
    names: list[str] = []
    for dashboard in snapshot.dashboards:
        for chart in dashboard.charts:
            names.extend(column.name for column in chart.columns if column.name not in names)

    def rows() -> Iterator[list[Any]]:
        for dashboard in snapshot.dashboards:
            for chart in dashboard.charts:
                positions = [names.index(column.name) for column in chart.columns]
                for row in chart.rows:
                    wide: list[Any] = [""] * len(names)
                    for position, value in zip(positions, row, strict=True):
                        wide[position] = value
                    yield [dashboard.name, chart.name, *wide]

    return ["dashboard", "chart", *names], rows()


# --- CSV --------------------------------------------------------------------------------------


def render_csv(snapshot: ReportSnapshot) -> bytes:
    """A CSV of the charts' data, or of ``generated_rows`` synthetic rows for load tests."""
    if snapshot.generated_rows is not None:
        return _generated_csv(snapshot.generated_rows)
    header, rows = _table(snapshot)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue().encode()


def _generated_csv(row_count: int) -> bytes:
    """About 45 bytes per row, from pre-formatted fragments in chunks, so 100 MB takes about two seconds."""
    days = [(FIRST_DAY + timedelta(days=offset)).isoformat() for offset in range(366)]
    # day, region and channel repeat every lcm(366, 4, 5) rows, so their text is formatted once.
    middles = [f"{days[k % 366]},{_REGIONS[k % 4]},{_CHANNELS[k % 5]}," for k in range(3660)]
    amounts = [f"{cents // 100}.{cents % 100:02d}\n" for cents in range(100_000)]
    chunks = [b"row_id,day,region,channel,orders,revenue\n"]
    for start in range(0, row_count, _CSV_CHUNK_ROWS):
        stop = min(start + _CSV_CHUNK_ROWS, row_count)
        lines = [
            f"{i},{middles[i % 3660]}{i * 7919 % 1000},{amounts[i * 104729 % 100_000]}" for i in range(start, stop)
        ]
        chunks.append("".join(lines).encode())
    return b"".join(chunks)


# --- HTML -------------------------------------------------------------------------------------


def render_html(snapshot: ReportSnapshot) -> bytes:
    """A self-contained HTML page with one table per chart."""
    esc = html.escape
    parts = [
        "<!DOCTYPE html>",
        f'<html lang="en"><head><meta charset="utf-8"><title>{esc(snapshot.name)}</title>',
        "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px}</style></head><body>",
        f"<h1>{esc(snapshot.name)}</h1><p>Generated {esc(snapshot.generated_at)}</p>",
    ]
    for dashboard in snapshot.dashboards:
        parts.append(f"<h2>{esc(dashboard.name)}</h2>")
        for chart in dashboard.charts:
            parts.append(f"<h3>{esc(chart.name)} ({esc(chart.type)})</h3><table><tr>")
            parts.extend(f"<th>{esc(column.name)}</th>" for column in chart.columns)
            parts.append("</tr>")
            for row in chart.rows:
                cells = "".join(f"<td>{esc(str(value))}</td>" for value in row)
                parts.append(f"<tr>{cells}</tr>")
            parts.append("</table>")
    parts.append("</body></html>\n")
    return "\n".join(parts).encode()


# --- XLSX -------------------------------------------------------------------------------------

_XLSX_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/xl/workbook.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
    '<Override PartName="/xl/worksheets/sheet1.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
    "</Types>"
)
_XLSX_ROOT_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" '
    'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    'Target="xl/workbook.xml"/></Relationships>'
)
_XLSX_WORKBOOK = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
    '<sheets><sheet name="Report" sheetId="1" r:id="rId1"/></sheets></workbook>'
)
_XLSX_WORKBOOK_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" '
    'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" '
    'Target="worksheets/sheet1.xml"/></Relationships>'
)


def _column_letter(index: int) -> str:
    letters = ""
    index += 1
    while index:
        index, remainder = divmod(index - 1, 26)
        letters = chr(ord("A") + remainder) + letters
    return letters


def _xlsx_cell(reference: str, value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'<c r="{reference}"><v>{value}</v></c>'
    text = html.escape(_XML_INVALID.sub("", str(value)), quote=False)
    return f'<c r="{reference}" t="inlineStr"><is><t xml:space="preserve">{text}</t></is></c>'


def render_xlsx(snapshot: ReportSnapshot) -> bytes:
    """A minimal valid OOXML workbook (one sheet, inline strings) built with ``zipfile``."""
    header, rows = _table(snapshot)
    sheet_rows = []
    for row_number, row in enumerate([header, *rows], start=1):
        cells = "".join(_xlsx_cell(f"{_column_letter(col)}{row_number}", value) for col, value in enumerate(row))
        sheet_rows.append(f'<row r="{row_number}">{cells}</row>')
    sheet = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        f"<sheetData>{''.join(sheet_rows)}</sheetData></worksheet>"
    )
    parts = {
        "[Content_Types].xml": _XLSX_CONTENT_TYPES,
        "_rels/.rels": _XLSX_ROOT_RELS,
        "xl/workbook.xml": _XLSX_WORKBOOK,
        "xl/_rels/workbook.xml.rels": _XLSX_WORKBOOK_RELS,
        "xl/worksheets/sheet1.xml": sheet,
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in parts.items():
            # A fixed timestamp keeps the bytes, and so the digest, identical for identical content.
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text)
    return buffer.getvalue()


# --- PDF --------------------------------------------------------------------------------------


def _pdf_text(text: str) -> str:
    """Text as a PDF literal string in WinAnsi (Helvetica's encoding), unknown characters as '?'."""
    latin = text.encode("cp1252", errors="replace").decode("latin-1")
    return latin.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _pdf_lines(snapshot: ReportSnapshot) -> list[tuple[int, str]]:
    """The report as (font size, text) lines."""
    lines = [(18, snapshot.name), (10, f"Generated {snapshot.generated_at}"), (10, "")]
    for dashboard in snapshot.dashboards:
        lines.append((14, f"Dashboard: {dashboard.name}"))
        for chart in dashboard.charts:
            lines.append((12, f"Chart: {chart.name} ({chart.type}), {len(chart.rows)} rows"))
            lines.append((9, "  " + " | ".join(column.name for column in chart.columns)))
            for row in chart.rows[:_PDF_SAMPLE_ROWS]:
                lines.append((9, "  " + " | ".join(str(value) for value in row)))
            lines.append((9, ""))
    return lines


def _pdf_pages(lines: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """Split lines into A4 pages by the height they take (each line: font size + 4 points)."""
    pages: list[list[tuple[int, str]]] = [[]]
    room = _PDF_TOP - _PDF_BOTTOM
    for size, text in lines:
        if size + 4 > room and pages[-1]:
            pages.append([])
            room = _PDF_TOP - _PDF_BOTTOM
        pages[-1].append((size, text))
        room -= size + 4
    return pages


def render_pdf(snapshot: ReportSnapshot) -> bytes:
    """A valid PDF 1.4 with text pages (Helvetica), hand-written objects and exact xref offsets."""
    lines = _pdf_lines(snapshot)
    pages = _pdf_pages(lines)
    font_id, pages_id = 3, 2
    objects: dict[int, bytes] = {1: b"<< /Type /Catalog /Pages 2 0 R >>", font_id: (
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    )}  # fmt: skip
    page_ids = []
    next_id = 4
    for page_lines in pages:
        commands = ["BT", f"50 {_PDF_TOP} Td"]
        for size, text in page_lines:
            commands.append(f"/F1 {size} Tf {size + 4} TL T* ({_pdf_text(text)}) Tj")
        commands.append("ET")
        stream = "\n".join(commands).encode("latin-1")
        page_id, content_id = next_id, next_id + 1
        next_id += 2
        objects[content_id] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)
        objects[page_id] = (
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 595 842] "
            b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>" % (pages_id, font_id, content_id)
        )
        page_ids.append(page_id)
    kids = " ".join(f"{page_id} 0 R" for page_id in page_ids).encode()
    objects[pages_id] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(page_ids))
    info_id = next_id
    objects[info_id] = b"<< /Title (%s) /Producer (Analytics Platform sandbox) >>" % _pdf_text(snapshot.name).encode(
        "latin-1"
    )

    output = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets: dict[int, int] = {}
    for object_id in sorted(objects):
        offsets[object_id] = len(output)
        output += b"%d 0 obj\n%s\nendobj\n" % (object_id, objects[object_id])
    xref_offset = len(output)
    size = max(objects) + 1
    output += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for object_id in range(1, size):
        output += b"%010d 00000 n \n" % offsets[object_id]
    output += b"trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        size,
        info_id,
        xref_offset,
    )
    return bytes(output)
