"""``Repr-Digest`` (RFC 9530) may list several algorithms: every one the client knows (sha-256, sha-512) is
checked, a malformed entry of one fails the download, and a wrong one leaves nothing on disk."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from airflow_provider_analytics.destinations._download import download_report_to
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.config import ClientConfig
from airflow_provider_analytics.wire.errors import DownloadIntegrityError
from airflow_provider_analytics.wire.retry import RetryPolicy
from tests.support.hostile import HostileServer, Script
from tests.support.reports import files_under, raw_download, ready_report


def _entry(algorithm: str, content: bytes) -> str:
    digest = hashlib.new(algorithm.replace("-", ""), content).digest()
    return f"{algorithm}=:{base64.b64encode(digest).decode()}:"


def _with_digest(sandbox: SandboxServer, value: str) -> None:
    sandbox.state.inject(Fault.headers(set={"Repr-Digest": value}, path="/download$"))


@pytest.mark.parametrize(
    "listed",
    [
        pytest.param(lambda good, bad: _entry("sha-512", bad), id="sha-512-only"),
        pytest.param(lambda good, bad: f"{_entry('sha-256', good)}, {_entry('sha-512', bad)}", id="sha-512-wrong"),
        pytest.param(lambda good, bad: f"{_entry('sha-512', bad)};p=1, {_entry('sha-256', good)}", id="with-params"),
    ],
)
def test_a_wrong_sha_512_fails_the_download(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path, listed: Callable[[bytes, bytes], str]
) -> None:
    report = ready_report(hook, sandbox)
    good = raw_download(sandbox, report["id"]).content
    _with_digest(sandbox, listed(good, good + b"tampered"))
    with pytest.raises(DownloadIntegrityError, match=r"sha-512 of the \d+ bytes received does not match Repr-Digest"):
        hook.download_report(report["id"], f"{tmp_path}/")
    assert files_under(tmp_path) == []


def test_a_right_sha_512_lets_the_file_through(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox)
    good = raw_download(sandbox, report["id"]).content
    _with_digest(sandbox, f"unixsum=:AAAA:, {_entry('sha-512', good)}, {_entry('sha-256', good)}")
    result = hook.download_report(report["id"], f"{tmp_path}/")
    assert result.sha256 == report["sha256"] == hashlib.sha256(good).hexdigest()  # sha-256 hex, as before
    assert Path(result.uri).read_bytes() == good


@pytest.mark.parametrize("value", ["sha-512=:AAAA:", "sha-512=:not base64!:", "sha-512=abc", "sha-512"])
def test_a_malformed_sha_512_fails_before_a_byte_is_written(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path, value: str
) -> None:
    report = ready_report(hook, sandbox)
    _with_digest(sandbox, value)
    with pytest.raises(DownloadIntegrityError, match="malformed sha-512"):
        hook.download_report(report["id"], f"{tmp_path}/")
    assert files_under(tmp_path) == []


def test_two_different_values_of_one_algorithm_fail(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    report = ready_report(hook, sandbox)
    good = raw_download(sandbox, report["id"]).content
    _with_digest(sandbox, f"{_entry('sha-512', good)}, {_entry('sha-512', good + b'x')}")
    with pytest.raises(DownloadIntegrityError, match="malformed sha-512"):
        hook.download_report(report["id"], f"{tmp_path}/")
    assert files_under(tmp_path) == []


CONTENT = bytes(range(256)) * 40
CUT = 4000


def _resumed(first_digest: str) -> list[Script]:
    """A 200 announcing the whole file with ``first_digest`` that stops at CUT, then the 206 with the rest."""
    pdf, etag = b"Content-Type: application/pdf", b'ETag: "v1"'
    first = Script(
        headers=(pdf, etag, b"Content-Length: %d" % len(CONTENT), b"Repr-Digest: " + first_digest.encode()),
        body=CONTENT[:CUT],
    )
    rest = CONTENT[CUT:]
    content_range = b"Content-Range: bytes %d-%d/%d" % (CUT, len(CONTENT) - 1, len(CONTENT))
    second = Script(
        b"HTTP/1.1 206 Partial Content", (pdf, etag, content_range, b"Content-Length: %d" % len(rest)), rest
    )
    return [first, second]


@pytest.mark.parametrize(("content", "passes"), [(CONTENT, True), (CONTENT[::-1], False)])
def test_sha_512_covers_a_resumed_download(tmp_path: Path, content: bytes, passes: bool) -> None:
    with HostileServer(_resumed(_entry("sha-512", content))) as server:
        config = ClientConfig(base_url=server.url, token="t0ken-value", retry=RetryPolicy(max_retries=0))
        with AnalyticsClient(config) as client:
            if passes:
                result = download_report_to(client, "rp_1", f"{tmp_path}/")
                assert Path(result.uri).read_bytes() == CONTENT
            else:
                with pytest.raises(DownloadIntegrityError, match="sha-512 of the 10240 bytes"):
                    download_report_to(client, "rp_1", f"{tmp_path}/")
                assert files_under(tmp_path) == []
        assert server.received[1].header("Range") == b"bytes=%d-" % CUT
