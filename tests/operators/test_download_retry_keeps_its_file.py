"""A download's retry finds the file its lost try wrote: it reports that file instead of failing on it.

The soak found it (stop 38's CI): a worker was killed after try 1 had moved the report into place and before the
task could report it; try 2 found the file and, ``overwrite`` being off, failed for good. A retry now keeps a
file that holds exactly the report (its ``size_bytes`` and ``sha256``), downloads nothing into it, and reports
it as try 1 would have. Anything else at the target is still refused, and a first try still refuses even the
report's own file before any request.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.destinations._target import holds_report
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.reports import DownloadReportOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.support.context import make_context, retry_context
from tests.support.final import raises_final
from tests.support.reports import download_requests, files_under, ready_report
from tests.support.task_log import task_log


def download(report: dict[str, Any], destination: str, context: Any) -> str:
    uri: str = DownloadReportOperator(task_id="download", report_id=report["id"], destination=destination).execute(
        context
    )
    return uri


@pytest.mark.parametrize("folder", [False, True], ids=["file", "folder"])
def test_a_retry_reports_the_file_its_lost_try_wrote(
    sandbox: SandboxServer, hook: AnalyticsHook, tmp_path: Path, folder: bool, caplog: pytest.LogCaptureFixture
) -> None:
    report = ready_report(hook, sandbox, format="csv", name="sales")
    destination = f"{tmp_path}/" if folder else str(tmp_path / "sales.csv")
    first = make_context()
    written = download(report, destination, first)  # try 1 got this far, then its process was lost
    before = Path(written).stat()
    downloads = len(download_requests(sandbox))

    retry = retry_context(2)
    with task_log(caplog) as lines:
        assert download(report, destination, retry) == written

    assert retry["ti"].xcom["download"] == first["ti"].xcom["download"]
    assert Path(written).stat().st_mtime_ns == before.st_mtime_ns  # not written again
    assert files_under(tmp_path) == ["sales.csv"]  # and no temporary file beside it
    # A file destination is decided before any download; a folder's file name comes from the download's headers,
    # so it costs that one request, whose body is never read.
    assert len(download_requests(sandbox)) == downloads + (1 if folder else 0)
    assert [message for level, message in lines if "an earlier try wrote it" in message and level == "info"], lines


@pytest.mark.parametrize("folder", [False, True], ids=["file", "folder"])
def test_a_retry_still_refuses_a_file_that_is_not_the_report(
    sandbox: SandboxServer, hook: AnalyticsHook, tmp_path: Path, folder: bool
) -> None:
    report = ready_report(hook, sandbox, format="csv", name="sales")
    other = tmp_path / "sales.csv"
    other.write_bytes(b"x" * report["size_bytes"])  # the right size, other bytes: hashed, then refused
    destination = f"{tmp_path}/" if folder else str(other)

    with raises_final(AnalyticsInputError, match="already exists: pass overwrite=True"):
        download(report, destination, retry_context(2))

    assert other.read_bytes() == b"x" * report["size_bytes"]
    assert files_under(tmp_path) == ["sales.csv"]


def test_a_first_try_refuses_even_the_reports_own_file_before_any_request(
    sandbox: SandboxServer, hook: AnalyticsHook, tmp_path: Path
) -> None:
    # Without overwrite, a first try never takes over a file it did not write: the promise of overwrite=False.
    report = ready_report(hook, sandbox, format="csv", name="sales")
    destination = str(tmp_path / "sales.csv")
    download(report, destination, make_context())
    requests = len(sandbox.state.requests)

    with raises_final(AnalyticsInputError, match="already exists: pass overwrite=True"):
        download(report, destination, make_context())

    assert len(sandbox.state.requests) == requests


def test_a_reports_hostile_fields_never_match_a_file(tmp_path: Path) -> None:
    content = b"a,b\n1,2\n"
    target = tmp_path / "r.csv"
    target.write_bytes(content)
    digest = hashlib.sha256(content).hexdigest()
    ready: dict[str, object] = {"status": "ready", "size_bytes": len(content), "sha256": digest}
    assert holds_report(target, ready)
    assert holds_report(target, {**ready, "sha256": digest.upper()})
    for hostile in (
        {"status": "expired"},
        {"status": None},
        {"size_bytes": True},  # a bool is not a size
        {"size_bytes": float(len(content))},
        {"size_bytes": len(content) + 1},
        {"size_bytes": -1},
        {"sha256": None},
        {"sha256": digest[:-1]},
        {"sha256": digest + "00"},
        {"sha256": "z" * 64},
        {"sha256": hashlib.sha256(b"other").hexdigest()},
    ):
        assert not holds_report(target, {**ready, **hostile}), hostile
    assert not holds_report(tmp_path / "missing.csv", ready)
    assert not holds_report(tmp_path, ready)  # a folder is no file
