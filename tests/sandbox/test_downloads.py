"""Report files (PDF, CSV, XLSX, HTML) and the download endpoint's headers and ranges."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
import time
import zipfile
from typing import Any
from xml.etree import ElementTree

import httpx
import pytest

from airflow_provider_analytics.sandbox.domain.store import SandboxState


def ready_report(client: httpx.Client, state: SandboxState, **body: object) -> dict[str, Any]:
    request = {"dashboard_ids": ["db_sales"], "format": "pdf", **body}
    report = client.post("/v1/reports", json=request).json()
    state.advance(1)
    ready: dict[str, Any] = client.get(f"/v1/reports/{report['id']}").json()
    assert ready["status"] == "ready", ready
    return ready


def digest_header(content: bytes) -> str:
    return f"sha-256=:{base64.b64encode(hashlib.sha256(content).digest()).decode()}:"


def test_download_headers_and_digest(client: httpx.Client, state: SandboxState) -> None:
    report = ready_report(client, state, name="../../etc/evil")
    response = client.get(f"/v1/reports/{report['id']}/download")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/pdf"
    assert int(response.headers["content-length"]) == len(response.content) == report["size_bytes"]
    assert response.headers["etag"] == f'"{report["sha256"]}"'
    assert response.headers["content-disposition"] == 'attachment; filename="../../etc/evil.pdf"'
    assert response.headers["repr-digest"] == digest_header(response.content)
    assert hashlib.sha256(response.content).hexdigest() == report["sha256"]


def test_filename_escaping(client: httpx.Client, state: SandboxState) -> None:
    report = ready_report(client, state, name='Q3 "final" \\ Umsätze', format="html")
    disposition = client.get(f"/v1/reports/{report['id']}/download").headers["content-disposition"]
    assert disposition.startswith('attachment; filename="Q3 \\"final\\" \\\\ Ums_tze.html"')
    assert "filename*=UTF-8''Q3%20%22final%22%20%5C%20Ums%C3%A4tze.html" in disposition


def test_range_requests(client: httpx.Client, state: SandboxState) -> None:
    report = ready_report(client, state)
    url = f"/v1/reports/{report['id']}/download"
    whole = client.get(url).content
    total = len(whole)
    partial = client.get(url, headers={"Range": "bytes=100-"})
    assert partial.status_code == 206
    assert partial.headers["content-range"] == f"bytes 100-{total - 1}/{total}"
    assert int(partial.headers["content-length"]) == total - 100
    assert partial.content == whole[100:]
    assert partial.headers["repr-digest"] == digest_header(whole)
    last_byte = client.get(url, headers={"Range": f"bytes={total - 1}-"})
    assert last_byte.content == whole[-1:]
    for start in (total, total + 10):
        beyond = client.get(url, headers={"Range": f"bytes={start}-"})
        assert beyond.status_code == 416
        assert beyond.headers["content-range"] == f"bytes */{total}"
        assert beyond.json()["error"]["request_id"] == beyond.headers["x-request-id"]
    stale = client.get(url, headers={"Range": "bytes=100-", "If-Range": '"other"'})
    assert stale.status_code == 200


def test_pdf_is_valid(client: httpx.Client, state: SandboxState) -> None:
    report = ready_report(client, state, name="Weekly (sales)")
    pdf = client.get(f"/v1/reports/{report['id']}/download").content
    assert pdf.startswith(b"%PDF-1.")
    assert pdf.rstrip().endswith(b"%%EOF")
    found = re.search(rb"startxref\s+(\d+)\s+%%EOF\s*$", pdf)
    assert found is not None, "no startxref at the end"
    startxref = int(found.group(1))
    assert pdf[startxref:].startswith(b"xref")
    lines = pdf[startxref:].split(b"\n")
    first, count = (int(part) for part in lines[1].split())
    assert first == 0
    entries = lines[2 : 2 + count]
    assert entries[0].startswith(b"0000000000 65535 f")
    for object_id, entry in enumerate(entries[1:], start=1):
        offset = int(entry[:10])
        assert pdf[offset:].startswith(b"%d 0 obj" % object_id)
    assert b"/Count" in pdf
    assert b"(Weekly \\(sales\\))" in pdf
    assert b"Dashboard: Sales" in pdf
    assert b"Chart: Daily revenue" in pdf


def test_xlsx_is_a_workbook(client: httpx.Client, state: SandboxState) -> None:
    report = ready_report(client, state, format="xlsx")
    response = client.get(f"/v1/reports/{report['id']}/download")
    assert response.headers["content-type"] == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        assert archive.testzip() is None
        names = set(archive.namelist())
        assert {
            "[Content_Types].xml",
            "_rels/.rels",
            "xl/workbook.xml",
            "xl/_rels/workbook.xml.rels",
            "xl/worksheets/sheet1.xml",
        } <= names
        for name in names:
            ElementTree.fromstring(archive.read(name))
        sheet = archive.read("xl/worksheets/sheet1.xml").decode()
    assert "Daily revenue" in sheet
    assert 'r="A1"' in sheet


def test_csv_and_html_reports(client: httpx.Client, state: SandboxState) -> None:
    report = ready_report(client, state, format="csv")
    text = client.get(f"/v1/reports/{report['id']}/download").text
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][:3] == ["dashboard", "chart", "day"]
    assert len(rows) == 1 + 3 * 250
    html = ready_report(client, state, format="html")
    page = client.get(f"/v1/reports/{html['id']}/download")
    assert page.headers["content-type"].startswith("text/html")
    assert page.text.startswith("<!DOCTYPE html>")
    assert page.headers["content-disposition"] == 'attachment; filename="Sales report.html"'


def test_generated_csv_rows_for_load_tests(client: httpx.Client, state: SandboxState) -> None:
    report = client.post(
        "/v1/reports", json={"dashboard_ids": ["db_sales"], "format": "csv", "parameters": {"rows": 200_000}}
    ).json()
    state.advance(1)
    deadline = time.monotonic() + 20
    while True:  # rendering 200,000 rows happens on a worker thread and takes real time
        current = client.get(f"/v1/reports/{report['id']}").json()
        if current["status"] == "ready" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert current["status"] == "ready"
    hasher, size, lines = hashlib.sha256(), 0, 0
    with client.stream("GET", f"/v1/reports/{report['id']}/download") as response:
        for chunk in response.iter_bytes():
            hasher.update(chunk)
            size += len(chunk)
            lines += chunk.count(b"\n")
    assert (size, hasher.hexdigest()) == (current["size_bytes"], current["sha256"])
    assert lines == 200_001


@pytest.mark.parametrize("rows", [-1, "10", 10**9])
def test_generated_rows_are_checked(client: httpx.Client, rows: object) -> None:
    body = {"dashboard_ids": ["db_sales"], "format": "csv", "parameters": {"rows": rows}}
    response = client.post("/v1/reports", json=body)
    assert response.status_code == 422
    assert "parameters.rows" in response.json()["error"]["details"]["fields"]
