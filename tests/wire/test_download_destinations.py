"""Report downloads to each kind of destination (folder, file, file URI, ObjectStoragePath), and the overwrite guard."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from airflow_provider_analytics.destinations._download import download_report_to
from airflow_provider_analytics.destinations._target import Destination, refuse_existing
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.version_compat import local_path_of, object_storage_paths_work
from airflow_provider_analytics.wire._file_headers import safe_filename
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.support.fixtures import make_config
from tests.support.reports import download_requests, files_under, raw_download, ready_report

# Airflow 3.0's ObjectStoragePath on universal-pathlib 0.3 cannot be built for any protocol (make test-compat
# holds universal-pathlib<0.3 for 3.0.6, as its users need to).
NEEDS_OBJECT_STORAGE = pytest.mark.skipif(
    not object_storage_paths_work(),
    reason="ObjectStoragePath refuses every protocol on Airflow 3.0 with universal-pathlib 0.3",
)


def test_pdf_to_folder_uses_the_platform_file_name(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox, name="Weekly sales")
    folder = tmp_path / "reports"
    folder.mkdir()

    result = hook.download_report(report["id"], str(folder) + "/")

    raw = raw_download(sandbox, report["id"])
    expected_name = safe_filename(raw.headers["content-disposition"])
    assert expected_name == "Weekly sales.pdf"
    assert result.uri == str(folder / expected_name)
    written = (folder / expected_name).read_bytes()
    assert written.startswith(b"%PDF")
    assert written == raw.content
    assert result.size == len(written) == report["size_bytes"]
    assert result.sha256 == hashlib.sha256(written).hexdigest() == report["sha256"]
    assert result.content_type == "application/pdf"
    assert files_under(folder) == [expected_name]
    assert result.to_dict() == {
        "uri": result.uri,
        "size": result.size,
        "sha256": result.sha256,
        "content_type": "application/pdf",
    }


def test_existing_folder_without_trailing_slash_is_a_folder(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    report = ready_report(hook, sandbox, name="Monthly")
    result = hook.download_report(report["id"], tmp_path)
    assert result.uri == str(tmp_path / "Monthly.pdf")
    assert hashlib.sha256((tmp_path / "Monthly.pdf").read_bytes()).hexdigest() == report["sha256"]


def test_new_folder_with_trailing_slash_is_created(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox, name="Nested")
    result = hook.download_report(report["id"], f"{tmp_path}/a/b/")
    assert result.uri == str(tmp_path / "a" / "b" / "Nested.pdf")
    assert files_under(tmp_path) == ["a/b/Nested.pdf"]


def test_pdf_to_explicit_file_path(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox, name="Ignored name")
    target = tmp_path / "chosen.pdf"

    result = hook.download_report(report["id"], str(target))

    assert result.uri == str(target)
    assert target.read_bytes().startswith(b"%PDF")
    assert hashlib.sha256(target.read_bytes()).hexdigest() == report["sha256"] == result.sha256
    assert files_under(tmp_path) == ["chosen.pdf"]


def test_pdf_to_file_uri(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox)
    target = tmp_path / "via-uri.pdf"

    result = hook.download_report(report["id"], f"file://{target}")

    assert target.read_bytes().startswith(b"%PDF")
    assert hashlib.sha256(target.read_bytes()).hexdigest() == report["sha256"]
    assert result.uri in (str(target), f"file://{target}")
    assert files_under(tmp_path) == ["via-uri.pdf"]


def test_file_uri_with_localhost_authority(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = ready_report(hook, sandbox)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # where a wrongly relative path would land
    target = tmp_path / "out" / "report.pdf"

    hook.download_report(report["id"], f"file://localhost{target}")

    assert files_under(elsewhere) == []
    assert hashlib.sha256(target.read_bytes()).hexdigest() == report["sha256"]


@NEEDS_OBJECT_STORAGE
def test_pdf_to_object_storage_path_returns_a_uri(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    from airflow.providers.common.compat.sdk import ObjectStoragePath

    report = ready_report(hook, sandbox)
    target = tmp_path / "objects" / "report.pdf"

    result = hook.download_report(report["id"], ObjectStoragePath(f"file://{target}"))

    assert result.uri.startswith("file://"), result.uri
    assert result.uri.endswith(str(target))
    assert target.read_bytes().startswith(b"%PDF")
    assert hashlib.sha256(target.read_bytes()).hexdigest() == report["sha256"] == result.sha256
    assert files_under(tmp_path) == ["objects/report.pdf"]


@NEEDS_OBJECT_STORAGE
def test_object_storage_existing_folder(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    from airflow.providers.common.compat.sdk import ObjectStoragePath

    report = ready_report(hook, sandbox, name="Into bucket")
    (tmp_path / "bucket").mkdir()
    result = hook.download_report(report["id"], ObjectStoragePath(f"file://{tmp_path}/bucket"))
    assert result.uri.startswith("file://"), result.uri
    assert result.uri.endswith(f"{tmp_path}/bucket/Into bucket.pdf")
    assert files_under(tmp_path) == ["bucket/Into bucket.pdf"]


def test_uri_string_with_trailing_slash_is_a_new_folder(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    report = ready_report(hook, sandbox, name="Into new folder")
    result = hook.download_report(report["id"], f"file://{tmp_path}/fresh/")
    assert Path(result.uri.removeprefix("file://")) == tmp_path / "fresh" / "Into new folder.pdf"
    assert files_under(tmp_path) == ["fresh/Into new folder.pdf"]


@NEEDS_OBJECT_STORAGE
def test_existing_folder_as_object_storage_path(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    # ObjectStoragePath forgets a trailing "/", so only an existing folder can be recognised as one (documented).
    from airflow.providers.common.compat.sdk import ObjectStoragePath

    (tmp_path / "bucket").mkdir()
    report = ready_report(hook, sandbox, name="Into bucket")
    result = hook.download_report(report["id"], ObjectStoragePath(f"file://{tmp_path}/bucket/"))
    assert result.uri.endswith(f"{tmp_path}/bucket/Into bucket.pdf"), result.uri
    assert files_under(tmp_path) == ["bucket/Into bucket.pdf"]


def test_remote_file_uri_host_is_refused(hook: AnalyticsHook, sandbox: SandboxServer) -> None:
    with pytest.raises(AnalyticsInputError, match="absolute local path"):
        hook.download_report("rp_any", "file://fileserver/share/report.pdf")
    assert sandbox.state.requests == []


def test_download_report_to_with_a_plain_client(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox, format="csv", name="plain")
    with AnalyticsClient(make_config(sandbox)) as client:
        result = download_report_to(client, report["id"], str(tmp_path) + "/")
    assert result.uri == str(tmp_path / "plain.csv")
    assert result.content_type == "text/csv"
    assert (tmp_path / "plain.csv").read_bytes().startswith(b"dashboard,chart,")


# --- overwrite guard ---------------------------------------------------------------------------------


def test_existing_file_is_refused_before_any_request(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    report = ready_report(hook, sandbox)
    target = tmp_path / "existing.pdf"
    target.write_bytes(b"keep me")
    before = len(sandbox.state.requests)

    with pytest.raises(AnalyticsInputError, match="overwrite=True"):
        hook.download_report(report["id"], str(target))

    assert download_requests(sandbox) == []
    assert len(sandbox.state.requests) == before
    assert target.read_bytes() == b"keep me"


def test_existing_file_is_replaced_with_overwrite(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox)
    target = tmp_path / "existing.pdf"
    target.write_bytes(b"old")

    result = hook.download_report(report["id"], str(target), overwrite=True)

    assert result.sha256 == report["sha256"]
    assert target.read_bytes().startswith(b"%PDF")
    assert files_under(tmp_path) == ["existing.pdf"]


def test_existing_file_in_folder_is_refused(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox, name="Taken")
    (tmp_path / "Taken.pdf").write_bytes(b"already here")

    with pytest.raises(AnalyticsInputError, match="already exists"):
        hook.download_report(report["id"], str(tmp_path) + "/")

    assert (tmp_path / "Taken.pdf").read_bytes() == b"already here"
    assert files_under(tmp_path) == ["Taken.pdf"]

    result = hook.download_report(report["id"], str(tmp_path) + "/", overwrite=True)
    assert result.sha256 == report["sha256"]
    assert files_under(tmp_path) == ["Taken.pdf"]


def test_a_file_that_appeared_after_the_parse_is_refused(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    # DownloadReportOperator parses and checks before it waits, then hands its parsed Destination to the hook,
    # which must check again: the writer moves its temporary file into place with os.replace.
    report = ready_report(hook, sandbox)
    target = tmp_path / "late.pdf"
    where = Destination.parse(str(target))
    refuse_existing(where.path, overwrite=False)
    target.write_bytes(b"written while the task waited")

    with pytest.raises(AnalyticsInputError, match="already exists: pass overwrite=True"):
        hook.download_report(report["id"], where)

    assert download_requests(sandbox) == []
    assert target.read_bytes() == b"written while the task waited"


# --- local_path_of: which destinations are written as local files ---------------------------------------


@NEEDS_OBJECT_STORAGE
def test_only_local_paths_are_local(tmp_path: Path) -> None:
    from airflow.providers.common.compat.sdk import ObjectStoragePath

    assert local_path_of(tmp_path / "r.pdf") == tmp_path / "r.pdf"
    assert type(local_path_of(tmp_path / "r.pdf")) is type(tmp_path)
    assert local_path_of(f"{tmp_path}/r.pdf") is None  # strings are parsed by Destination.parse first
    # On universal-pathlib 0.2 an object storage path is a pathlib.Path too; it must not count as local.
    assert local_path_of(ObjectStoragePath("memory://bucket/reports/r.pdf")) is None


@NEEDS_OBJECT_STORAGE
def test_a_file_object_storage_path_is_its_plain_local_path(tmp_path: Path) -> None:
    from airflow.providers.common.compat.sdk import ObjectStoragePath

    local = local_path_of(ObjectStoragePath(f"file://{tmp_path}/r.pdf"))
    assert local == tmp_path / "r.pdf"
    assert type(local) is type(tmp_path)  # a plain Path, whose str() is the path and not a file:// URI
    assert str(local) == f"{tmp_path}/r.pdf"
