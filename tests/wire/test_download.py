"""Report downloads end to end against the sandbox: destinations, overwrite guard, resume, integrity, names."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.hooks.destinations import download_report_to
from airflow_provider_analytics.sandbox.config import Timings
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.download import parse_repr_digest, safe_filename
from airflow_provider_analytics.wire.errors import (
    AnalyticsInputError,
    ConflictError,
    DownloadIntegrityError,
    GoneError,
)
from tests.support.fixtures import make_config
from tests.support.reports import download_requests, files_under, raw_download, ready_report

# --- destinations ------------------------------------------------------------------------------------


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


def test_pdf_to_object_storage_path_returns_a_uri(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    from airflow.sdk import ObjectStoragePath

    report = ready_report(hook, sandbox)
    target = tmp_path / "objects" / "report.pdf"

    result = hook.download_report(report["id"], ObjectStoragePath(f"file://{target}"))

    assert result.uri.startswith("file://"), result.uri
    assert result.uri.endswith(str(target))
    assert target.read_bytes().startswith(b"%PDF")
    assert hashlib.sha256(target.read_bytes()).hexdigest() == report["sha256"] == result.sha256
    assert files_under(tmp_path) == ["objects/report.pdf"]


def test_object_storage_existing_folder(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    from airflow.sdk import ObjectStoragePath

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


def test_existing_folder_as_object_storage_path(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    # ObjectStoragePath forgets a trailing "/", so only an existing folder can be recognised as one (documented).
    from airflow.sdk import ObjectStoragePath

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


# --- resume and integrity ----------------------------------------------------------------------------


def test_dropped_body_is_resumed_with_range(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox)
    cut = 1000
    assert report["size_bytes"] > cut
    sandbox.state.inject(Fault.truncate(at_bytes=cut))

    result = hook.download_report(report["id"], str(tmp_path / "resumed.pdf"))

    first, second = download_requests(sandbox)
    assert "range" not in first.headers
    assert second.headers["range"] == f"bytes={cut}-"
    assert second.headers["if-range"] == f'"{report["sha256"]}"'
    assert second.status == 206
    data = (tmp_path / "resumed.pdf").read_bytes()
    assert hashlib.sha256(data).hexdigest() == report["sha256"] == result.sha256
    assert len(data) == report["size_bytes"] == result.size
    assert files_under(tmp_path) == ["resumed.pdf"]


def test_resume_of_a_large_file_continues_where_it_stopped(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    report = ready_report(hook, sandbox, format="csv", name="rows", parameters={"rows": 20_000})
    cuts = [300_000, 250_000]  # the second cut applies to the resumed (206) body
    assert report["size_bytes"] > sum(cuts) + 1
    sandbox.state.inject(Fault.truncate(at_bytes=cuts[0]), Fault.truncate(at_bytes=cuts[1]))

    result = hook.download_report(report["id"], str(tmp_path) + "/")

    ranges = [entry.headers.get("range") for entry in download_requests(sandbox)]
    assert ranges == [None, f"bytes={cuts[0]}-", f"bytes={sum(cuts)}-"]
    assert result.sha256 == report["sha256"]
    assert hashlib.sha256((tmp_path / "rows.csv").read_bytes()).hexdigest() == report["sha256"]


def test_truncated_every_time_fails_and_leaves_nothing(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    report = ready_report(hook, sandbox)
    assert report["size_bytes"] > 1000
    sandbox.state.inject(Fault.truncate(at_bytes=100, times=50))
    folder = tmp_path / "out"
    folder.mkdir()

    with pytest.raises(DownloadIntegrityError, match=report["id"]):
        hook.download_report(report["id"], str(folder) + "/")

    assert files_under(folder) == []
    assert files_under(tmp_path) == []
    attempts = download_requests(sandbox)
    assert 2 <= len(attempts) <= 10  # resumed a bounded number of times


def test_truncated_explicit_path_leaves_nothing(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox)
    sandbox.state.inject(Fault.truncate(at_bytes=0, times=50))

    with pytest.raises(DownloadIntegrityError):
        hook.download_report(report["id"], str(tmp_path / "never.pdf"))

    assert files_under(tmp_path) == []


def test_bad_digest_fails_and_leaves_nothing(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox, name="Digest")
    sandbox.state.inject(Fault.bad_digest())

    with pytest.raises(DownloadIntegrityError, match="Repr-Digest"):
        hook.download_report(report["id"], str(tmp_path) + "/")

    assert files_under(tmp_path) == []
    # The fault was used up: the same call now works.
    assert hook.download_report(report["id"], str(tmp_path) + "/").sha256 == report["sha256"]


def test_bad_digest_does_not_replace_an_existing_file(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    report = ready_report(hook, sandbox)
    target = tmp_path / "keep.pdf"
    target.write_bytes(b"previous good file")
    sandbox.state.inject(Fault.bad_digest())

    with pytest.raises(DownloadIntegrityError):
        hook.download_report(report["id"], str(target), overwrite=True)

    assert target.read_bytes() == b"previous good file"
    assert files_under(tmp_path) == ["keep.pdf"]


# --- untrusted file names ----------------------------------------------------------------------------


def test_traversal_name_lands_inside_the_folder(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox, name="../../etc/evil")
    folder = tmp_path / "a" / "b" / "inside"
    folder.mkdir(parents=True)
    assert "../../etc/evil" in raw_download(sandbox, report["id"]).headers["content-disposition"]

    result = hook.download_report(report["id"], str(folder) + "/")

    written = Path(result.uri)
    assert written.parent == folder
    assert written.name == "evil.pdf"
    assert files_under(tmp_path) == ["a/b/inside/evil.pdf"]
    assert not (tmp_path / "etc").exists()
    assert not (tmp_path / "a" / "etc").exists()


def test_hidden_name_does_not_become_a_dotfile(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox, name="..bashrc")
    result = hook.download_report(report["id"], str(tmp_path) + "/")
    assert Path(result.uri).parent == tmp_path
    assert not Path(result.uri).name.startswith(".")
    assert files_under(tmp_path) == [Path(result.uri).name]


def test_non_ascii_name_becomes_a_portable_name(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox, name="Umsätze")
    assert "filename*=UTF-8''Ums%C3%A4tze.pdf" in raw_download(sandbox, report["id"]).headers["content-disposition"]
    result = hook.download_report(report["id"], str(tmp_path) + "/")
    assert Path(result.uri).name == "Ums_tze.pdf"
    assert files_under(tmp_path) == ["Ums_tze.pdf"]


# --- report state ------------------------------------------------------------------------------------


def test_not_ready_report_is_a_conflict(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    sandbox.state.set_timings(Timings(report_pending=5, report_generating=5))  # cannot become ready meanwhile
    report = hook.generate_report(["db_sales"], "pdf")
    assert report["status"] == "pending"

    with pytest.raises(ConflictError) as caught:
        hook.download_report(report["id"], str(tmp_path) + "/")

    assert caught.value.status == 409
    assert caught.value.request_id
    assert files_under(tmp_path) == []
    assert [entry.status for entry in download_requests(sandbox)] == [409]  # not retried


def test_failed_report_is_a_conflict(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    sandbox.state.set_report_outcome("failed")
    report = hook.generate_report(["db_sales"], "pdf")
    sandbox.state.advance(5)
    assert hook.get_report(report["id"])["status"] == "failed"

    with pytest.raises(ConflictError):
        hook.download_report(report["id"], str(tmp_path / "x.pdf"))
    assert files_under(tmp_path) == []


def test_expired_report_is_gone(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox)
    sandbox.state.expire_report(report["id"])

    with pytest.raises(GoneError) as caught:
        hook.download_report(report["id"], str(tmp_path) + "/")

    assert caught.value.status == 410
    assert files_under(tmp_path) == []


def test_bad_report_id_is_refused_before_any_request(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    with pytest.raises(AnalyticsInputError, match="report_id"):
        hook.download_report("../reports", str(tmp_path) + "/")
    assert sandbox.state.requests == []


# --- safe_filename and parse_repr_digest -------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ('attachment; filename="report.pdf"', "report.pdf"),
        ("attachment; filename=report.pdf", "report.pdf"),
        ('attachment; filename="../../etc/passwd"', "passwd"),
        ('attachment; filename="/etc/passwd"', "passwd"),
        ('attachment; filename="..\\\\..\\\\windows\\\\win.ini"', "win.ini"),
        ('attachment; filename="C:\\\\temp\\\\x.csv"', "x.csv"),
        # filename* is percent-decoded and preferred; names are reduced to a portable ASCII set.
        ("attachment; filename*=UTF-8''Q1%20report%20(final).pdf", "Q1 report (final).pdf"),
        ("attachment; filename*=utf-8''Ums%C3%A4tze%20Q1.pdf", "Ums_tze Q1.pdf"),
        ("attachment; filename=\"fallback.pdf\"; filename*=UTF-8''%E2%82%AC%20rates.csv", "_ rates.csv"),
        ("attachment; filename*=UTF-8''rates.csv; filename=\"fallback.pdf\"", "rates.csv"),
        ("attachment; filename*=UTF-8''..%2F..%2Fetc%2Fshadow", "shadow"),
        ('attachment; filename=".bashrc"', "bashrc"),
        ('attachment; filename="...hidden.pdf"', "hidden.pdf"),
        ('attachment; filename="a\\"b.pdf"', "a_b.pdf"),
        ('attachment; filename="rm -rf $(x);`y`.csv"', "rm -rf _(x)_y_.csv"),
        ('attachment; filename="tab\there.pdf"', "tab_here.pdf"),
    ],
)
def test_safe_filename(header: str, expected: str) -> None:
    assert safe_filename(header) == expected


@pytest.mark.parametrize(
    "header",
    [None, "", "attachment", "inline", 'attachment; filename=""', 'attachment; filename=".."', 'filename="/"'],
)
def test_safe_filename_without_a_usable_name(header: str | None) -> None:
    assert safe_filename(header) is None


def test_safe_filename_never_leaves_a_separator_or_a_leading_dot() -> None:
    hostile = ["../", "..\\", "./.", "/..", "\\\\server\\share\\", "%2e%2e/", ". . /", "\x00/", "a/../../b/.c"]
    for left in hostile:
        for right in ("x", ".x", "..", " y.pdf"):
            for form in (f'attachment; filename="{left}{right}"', f"attachment; filename*=UTF-8''{left}{right}"):
                name = safe_filename(form)
                if name is None:
                    continue
                assert "/" not in name, (form, name)
                assert "\\" not in name, (form, name)
                assert not name.startswith("."), (form, name)
                assert name not in ("", ".", ".."), (form, name)
                assert "\x00" not in name


def test_safe_filename_caps_the_length() -> None:
    name = safe_filename(f'attachment; filename="{"a" * 1000}.pdf"')
    assert name is not None
    assert len(name) <= 255


def test_parse_repr_digest() -> None:
    digest = hashlib.sha256(b"hello").digest()
    encoded = base64.b64encode(digest).decode()
    assert parse_repr_digest(f"sha-256=:{encoded}:") == digest
    assert parse_repr_digest(f"sha-512=:{base64.b64encode(bytes(64)).decode()}:, sha-256=:{encoded}:") == digest
    assert parse_repr_digest(None) is None
    assert parse_repr_digest("") is None
    assert parse_repr_digest("sha-512=:AAAA:") is None
    for malformed in (f"sha-256={encoded}", "sha-256=:not base64!:", "sha-256=:AAAA:"):
        with pytest.raises(DownloadIntegrityError, match="malformed sha-256"):
            parse_repr_digest(malformed)


# --- memory ------------------------------------------------------------------------------------------

_MEMORY_PROBE = textwrap.dedent(
    """
    import json, resource, sys

    import httpx
    from airflow.sdk import ObjectStoragePath  # noqa: F401  (warm the lazy import of Destination.parse)
    from airflow_provider_analytics.hooks.destinations import download_report_to
    from airflow_provider_analytics.wire.client import AnalyticsClient
    from airflow_provider_analytics.wire.core import ClientConfig

    def peak_kib():
        # VmHWM is this process's own peak RSS. ru_maxrss is not: after a vfork+exec it starts at the
        # parent's peak (the pytest process, which holds the sandbox's 60 MB file).
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    args = json.loads(sys.argv[1])
    config = ClientConfig(base_url=args["base_url"], token=args["token"], timeout=60.0)
    with AnalyticsClient(config) as client:
        download_report_to(client, args["warmup_id"], args["warmup_path"])  # warm every code path
        before = peak_kib()
        result = download_report_to(client, args["report_id"], args["path"])
        after = peak_kib()
    # Control: the same file read into memory does move the measurement.
    url = args["base_url"] + "/v1/reports/" + args["report_id"] + "/download"
    body = httpx.get(url, headers={"Authorization": "Bearer " + args["token"]}, timeout=60.0).content
    control = peak_kib()
    print("RESULT " + json.dumps({
        "before_kib": before, "after_kib": after, "control_kib": control, "control_size": len(body),
        "ru_maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, **result.to_dict(),
    }))
    """
)


def test_large_download_streams_in_flat_memory(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    warmup = ready_report(hook, sandbox, format="csv", name="warmup", parameters={"rows": 1000})
    big = ready_report(hook, sandbox, format="csv", name="big", parameters={"rows": 1_400_000})
    assert big["size_bytes"] > 55 * 1024 * 1024
    target = tmp_path / "big.csv"
    env = dict(os.environ)
    env.pop("AIRFLOW_CONN_ANALYTICS_DEFAULT", None)
    args = {
        "base_url": sandbox.base_url,
        "token": sandbox.token,
        "warmup_id": warmup["id"],
        "warmup_path": str(tmp_path / "warmup.csv"),
        "report_id": big["id"],
        "path": str(target),
    }
    try:
        completed = subprocess.run(
            [sys.executable, "-c", _MEMORY_PROBE, json.dumps(args)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert completed.returncode == 0, completed.stderr
        line = next(line for line in completed.stdout.splitlines() if line.startswith("RESULT "))
        measured = json.loads(line[len("RESULT ") :])
        growth_mib = (measured["after_kib"] - measured["before_kib"]) / 1024
        control_mib = (measured["control_kib"] - measured["after_kib"]) / 1024
        print(
            f"peak RSS growth during a {big['size_bytes'] / 2**20:.1f} MiB download: {growth_mib:.1f} MiB "
            f"(reading it into memory instead: {control_mib:.1f} MiB)"
        )
        assert measured["size"] == big["size_bytes"] == target.stat().st_size
        assert measured["sha256"] == big["sha256"]
        assert measured["control_size"] == big["size_bytes"]
        assert control_mib > 50, measured  # the measurement can see a buffered download
        assert growth_mib < 30, measured
    finally:
        target.unlink(missing_ok=True)
