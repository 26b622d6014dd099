"""Report downloads that break: a dropped body resumed with Range, truncation and bad digests leave nothing behind."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire._file_headers import parse_repr_digest
from airflow_provider_analytics.wire.errors import DownloadIntegrityError
from tests.support.reports import download_requests, files_under, ready_report


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


def test_parse_repr_digest() -> None:
    digest = hashlib.sha256(b"hello").digest()
    encoded = base64.b64encode(digest).decode()
    assert parse_repr_digest(f"sha-256=:{encoded}:") == digest
    assert parse_repr_digest(f"sha-512=:{base64.b64encode(bytes(64)).decode()}:, sha-256=:{encoded}:") == digest
    assert parse_repr_digest(None) is None
    assert parse_repr_digest("") is None
    assert parse_repr_digest(f"sha-512=:{base64.b64encode(bytes(64)).decode()}:") is None
    for malformed in (f"sha-256={encoded}", "sha-256=:not base64!:", "sha-256=:AAAA:"):
        with pytest.raises(DownloadIntegrityError, match="malformed sha-256"):
            parse_repr_digest(malformed)
