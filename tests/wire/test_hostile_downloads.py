"""Report downloads from a hostile or broken platform: nothing wrong ever lands on disk."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.destinations._download import download_report_to
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.errors import (
    AnalyticsError,
    AnalyticsInputError,
    DownloadIntegrityError,
    UnexpectedResponseError,
)
from tests.support.fixtures import make_config
from tests.support.reports import download_requests, files_under, raw_download, ready_report

PDF = "application/pdf"


def _pdf_headers(size: int, **extra: str) -> dict[str, str]:
    return {"Content-Type": PDF, "Content-Length": str(size), **extra}


@pytest.mark.parametrize(
    ("code", "headers", "body", "error"),
    [
        (204, {}, b"", DownloadIntegrityError),
        (206, {"Content-Type": PDF, "Content-Range": "bytes 0-9/10"}, b"%PDF-evil!", DownloadIntegrityError),
        (
            302,
            {"Location": "https://login.example/", "Content-Type": "text/html"},
            b"<html>login</html>",
            UnexpectedResponseError,
        ),
        (203, {"Content-Type": PDF}, b"%PDF-proxy", DownloadIntegrityError),
    ],
)
def test_only_a_200_starts_a_download(
    hook: AnalyticsHook,
    sandbox: SandboxServer,
    tmp_path: Path,
    code: int,
    headers: dict[str, str],
    body: bytes,
    error: type[AnalyticsError],
) -> None:
    report = ready_report(hook, sandbox)
    sandbox.state.inject(Fault.respond(code, headers=headers, body=body, path="/download$"))
    with pytest.raises(error, match=str(code)):
        hook.download_report(report["id"], f"{tmp_path}/")
    assert files_under(tmp_path) == []


def test_downloads_ask_for_identity_and_refuse_a_compressed_answer(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    report = ready_report(hook, sandbox)
    sandbox.state.inject(Fault.gzip(force=True, path="/download$"))
    with pytest.raises(DownloadIntegrityError, match="Content-Encoding"):
        hook.download_report(report["id"], f"{tmp_path}/")
    assert files_under(tmp_path) == []

    sandbox.state.inject(Fault.gzip(path="/download$"))  # an honest server: compresses only when asked to
    result = hook.download_report(report["id"], f"{tmp_path}/")
    assert result.sha256 == report["sha256"]
    assert {entry.headers.get("accept-encoding") for entry in download_requests(sandbox)} == {"identity"}


def test_a_resume_against_a_changed_file_starts_over(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    report = ready_report(hook, sandbox)
    total, cut = report["size_bytes"], 1000
    sandbox.state.inject(Fault.truncate(at_bytes=cut))
    other_file = _pdf_headers(
        total - cut, ETag='"another-file"', **{"Content-Range": f"bytes {cut}-{total - 1}/{total}"}
    )
    sandbox.state.inject(Fault.respond(206, headers=other_file, body=b"Z" * (total - cut), path="/download$"))

    result = hook.download_report(report["id"], f"{tmp_path}/")

    assert result.sha256 == report["sha256"] == hashlib.sha256(Path(result.uri).read_bytes()).hexdigest()
    first, resume, restart = download_requests(sandbox)
    assert "range" not in first.headers
    assert resume.headers["range"] == f"bytes={cut}-"
    assert "range" not in restart.headers


def test_a_weak_etag_is_never_used_to_resume(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox)
    whole = raw_download(sandbox, report["id"]).content
    # Announces the whole file with a weak validator, then stops after 1000 bytes.
    headers = _pdf_headers(len(whole), ETag='W/"v1"')
    sandbox.state.inject(Fault.respond(200, headers=headers, body=whole[:1000], path="/download$"))

    result = hook.download_report(report["id"], f"{tmp_path}/")

    assert result.sha256 == report["sha256"]
    requests = download_requests(sandbox)
    assert len(requests) == 3  # the raw fetch above, the cut one, a full restart
    assert "range" not in requests[-1].headers
    assert "if-range" not in requests[-1].headers


def test_an_absurd_announced_size_writes_nothing(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox)
    sandbox.state.inject(
        Fault.stream(
            200,
            headers={"Content-Type": PDF, "ETag": '"huge"'},
            content_length=10**15,
            chunk=b"x" * 65536,
            chunk_count=100_000,
            path="/download$",
        )
    )
    # Refused on the headers, for what they announce: streaming would have ended with another error.
    with pytest.raises(DownloadIntegrityError, match=rf"announced {10**15} bytes, over the .* max_download_bytes"):
        hook.download_report(report["id"], f"{tmp_path}/")
    assert files_under(tmp_path) == []


def test_the_download_limit_is_configurable(sandbox: SandboxServer, hook: AnalyticsHook, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox)
    config = make_config(sandbox, max_download_bytes=report["size_bytes"] - 1)
    with AnalyticsClient(config) as client, pytest.raises(DownloadIntegrityError, match="over the"):
        download_report_to(client, report["id"], f"{tmp_path}/")
    assert files_under(tmp_path) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [({"size_bytes": 1}, "size_bytes 1"), ({"sha256": "0" * 64}, "the report's sha256")],
)
def test_the_reports_own_size_and_digest_are_checked(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path, change: dict[str, Any], problem: str
) -> None:
    report = ready_report(hook, sandbox)
    with pytest.raises(DownloadIntegrityError, match=problem):
        hook.download_report(report["id"], f"{tmp_path}/", report={**report, **change})
    assert files_under(tmp_path) == []


def test_a_trickling_download_ends_at_its_deadline(sandbox: SandboxServer, hook: AnalyticsHook, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox)
    trickle = Fault.stream(
        200,
        headers={"Content-Type": PDF},
        content_length=40,
        chunk=b"x",
        chunk_count=40,
        interval=0.5,
        path="/download$",
    )
    sandbox.state.inject(trickle)
    # Each byte comes 0.5 s after the last, inside the 1 s read timeout: only the deadline on each attempt
    # ends it, as a lost connection. Without it the 40 bytes arrive after 20 s and no connection is lost.
    with (
        AnalyticsClient(make_config(sandbox, timeout=1.0)) as client,
        pytest.raises(DownloadIntegrityError, match="connection lost"),
    ):
        download_report_to(client, report["id"], f"{tmp_path}/")
    assert files_under(tmp_path) == []


def test_an_existing_file_given_as_a_folder_is_refused_before_any_request(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    (tmp_path / "reports").write_text("I am a file")
    with pytest.raises(AnalyticsInputError, match="existing file"):
        hook.download_report("rp_anything", f"{tmp_path}/reports/")
    with pytest.raises(AnalyticsInputError, match="cannot create the folder"):
        hook.download_report("rp_anything", f"{tmp_path}/reports/inside.pdf")
    assert download_requests(sandbox) == []


@pytest.mark.parametrize("name", ["evil.py", "report.pdf.py", "payload.sh", "noextension", "report.PDF.exe"])
def test_a_server_chosen_name_keeps_only_the_content_types_extension(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path, name: str
) -> None:
    report = ready_report(hook, sandbox)
    dags = tmp_path / "dags"
    sandbox.state.inject(
        Fault.headers(set={"Content-Disposition": f'attachment; filename="{name}"'}, path="/download$")
    )
    result = hook.download_report(report["id"], f"{dags}/")
    assert files_under(dags) == [f"{report['id']}.pdf"]
    assert result.uri == str(dags / f"{report['id']}.pdf")


def test_a_name_with_the_right_extension_is_kept(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox)
    sandbox.state.inject(
        Fault.headers(set={"Content-Disposition": 'attachment; filename="Q4 Sales.PDF"'}, path="/download$")
    )
    hook.download_report(report["id"], f"{tmp_path}/")
    assert files_under(tmp_path) == ["Q4 Sales.PDF"]
