"""No answer can add more than ~100 MB to a client's memory: measured in a fresh process.

The hostile server runs in this (the parent) process, so its memory is not counted; a subprocess runs the
client, warms up, takes its peak RSS (``VmHWM``) as the baseline, makes one hostile request after another
and prints how far its peak moved. A control in the same subprocess shows the measurement can fail.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path

from airflow_provider_analytics.wire.config import DEFAULT_MAX_RESPONSE_BYTES
from tests.support.hostile import HostileServer, Script, chunked, json_script

BOUND_MB = 100
MIB = 1024 * 1024
BIG = 300 * MIB
_BLOCK = bytes(range(256)) * 256  # 64 KiB
_JSON = b"Content-Type: application/json"
_PDF = (b"Content-Type: application/pdf", b'ETag: "big"', b'Content-Disposition: attachment; filename="big.pdf"')


def _json_blocks() -> Iterator[bytes]:
    """300 MiB of one JSON string, ``{"data": ["xxx...``, never closed."""
    yield b'{"data": ["'
    for _ in range(BIG // len(_BLOCK)):
        yield b"x" * len(_BLOCK)


def _file_blocks() -> Iterator[bytes]:
    """300 MiB of file content, exactly."""
    for _ in range(BIG // len(_BLOCK)):
        yield _BLOCK


def _gzip_bomb(inflated: int = 1 << 30) -> bytes:
    """About 1 MiB of valid gzip that inflates to ``inflated`` zero bytes, built a MiB at a time.

    Each MiB is deflated once and ended with a full flush, which resets the compressor: every MiB then
    compresses to the same bytes, and the member is that piece repeated, an end block and the trailer.
    """
    zeros = bytes(MIB)
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    piece = packer.compress(zeros) + packer.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(inflated // MIB):
        crc = zlib.crc32(zeros, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    trailer = struct.pack("<II", crc, inflated & 0xFFFFFFFF)
    return header + piece * (inflated // MIB) + packer.flush(zlib.Z_FINISH) + trailer


def _scripts() -> tuple[list[Script], dict[str, object]]:
    """The answers in the order the subprocess asks for them, and what it should expect."""
    worst = b'{"data": [' + b"{}," * ((DEFAULT_MAX_RESPONSE_BYTES - 13) // 3) + b"{}]}"
    nested = b"[" * (MIB // 2) + b"]" * (MIB // 2)
    bomb = _gzip_bomb()
    digest = hashlib.sha256()
    for block in _file_blocks():
        digest.update(block)
    repr_digest = b"Repr-Digest: sha-256=:%s:" % base64.b64encode(digest.digest())
    streamed = Script(headers=(_JSON, b"Transfer-Encoding: chunked"), body=lambda: chunked(_json_blocks()))
    length = b"Content-Length: %d" % (BIG + 11)
    download = (*_PDF, b"Content-Length: %d" % BIG, repr_digest)
    scripts = [
        json_script(b'{"data": []}'),  # warm-up: one normal request
        Script(headers=(*_PDF, b"Content-Length: 5"), body=b"%PDF-"),  # warm-up: one small download
        streamed,
        Script(headers=(_JSON, length), body=_json_blocks),
        Script(b"HTTP/1.1 503 Service Unavailable", (_JSON, length), _json_blocks),
        Script(headers=(_JSON, b"Content-Encoding: gzip", b"Content-Length: %d" % len(bomb)), body=bomb),
        json_script(nested),
        Script(headers=(*_PDF, b"Content-Length: %d" % 10**15), body=_file_blocks),
        Script(headers=download, body=_file_blocks),
        Script(headers=download, body=_file_blocks),
        streamed,
        Script(headers=(_JSON, b"Content-Encoding: gzip", b"Content-Length: %d" % len(bomb)), body=bomb),
        json_script(worst),  # last: its ~78 MB peak would hide what the others add
    ]
    assert len(bomb) < 1.1 * MIB
    assert DEFAULT_MAX_RESPONSE_BYTES - 3 < len(worst) <= DEFAULT_MAX_RESPONSE_BYTES
    return scripts, {"sha256": digest.hexdigest(), "size": BIG}


_PROGRAM = textwrap.dedent(
    """
    import asyncio, json, os, sys
    from airflow.providers.common.compat.sdk import ObjectStoragePath  # a destination's import: before the baseline
    from airflow_provider_analytics.destinations._download import download_report_to
    from airflow_provider_analytics.wire import _endpoints as endpoints
    from airflow_provider_analytics.wire.client import AnalyticsClient, AsyncAnalyticsClient
    from airflow_provider_analytics.wire.config import ClientConfig
    from airflow_provider_analytics.wire.errors import AnalyticsError
    from airflow_provider_analytics.wire.retry import RetryPolicy

    base_url, folder = sys.argv[1], sys.argv[2]

    def status_mb(field):
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field):
                    return int(line.split()[1]) / 1024

    def peak_mb():
        return status_mb("VmHWM:")

    def config(**settings):
        return ClientConfig(base_url=base_url, token="t0ken-value", timeout=120, retry=RetryPolicy(max_retries=0),
                            **settings)

    def charts(**settings):
        with AnalyticsClient(config(**settings)) as client:
            return f"parsed {len(client.call(endpoints.list_charts()))} items"

    def charts_async():
        async def scenario():
            async with AsyncAnalyticsClient(config()) as client:
                return f"parsed {len(await client.call(endpoints.list_charts()))} items"
        return asyncio.run(scenario())

    def download(**settings):
        with AnalyticsClient(config(**settings)) as client:
            result = download_report_to(client, "rp_1", folder + "/", overwrite=True)
        os.unlink(result.uri)
        return f"written {result.size} {result.sha256}"

    charts()
    download()
    steps = [
        ("300 MiB JSON, chunked", charts),
        ("300 MiB JSON, true Content-Length", charts),
        ("300 MiB error body (503)", charts),
        ("gzip bomb, 1 MiB to 1 GiB", charts),
        ("deeply nested JSON", charts),
        ("download announcing 10**15 bytes", download),
        ("300 MiB download, small max_download_bytes", lambda: download(max_download_bytes=64 * 1024 * 1024)),
        ("300 MiB download to a file", lambda: download(max_download_bytes=1024**3)),
        ("async: 300 MiB JSON, chunked", charts_async),
        ("async: gzip bomb, 1 MiB to 1 GiB", charts_async),
        ("worst JSON shape under the cap", charts),
    ]
    baseline = peak_mb()
    outcomes, growth = {}, {}
    for name, step in steps:
        try:
            outcomes[name] = step()
        except AnalyticsError as error:
            outcomes[name] = type(error).__name__
        growth[name] = round(peak_mb() - baseline, 1)
    total = peak_mb() - baseline
    # The control: 150 MB more than the peak so far (freed memory is reused first), touched page by page.
    before_control = peak_mb()
    ballast = b"x" * int((150 + before_control - status_mb("VmRSS:")) * 1024 * 1024)
    control = peak_mb() - before_control
    del ballast
    print(json.dumps({"growth_mb": round(total, 1), "control_mb": round(control, 1), "baseline_mb": baseline,
                      "steps": growth, "outcomes": outcomes, "left": os.listdir(folder)}))
    """
)


def test_no_answer_adds_more_than_100_mb() -> None:
    scripts, expected = _scripts()
    threads_before = set(threading.enumerate())
    with tempfile.TemporaryDirectory(prefix="apa-memory-") as folder:
        with HostileServer(scripts) as server:
            done = subprocess.run(
                [sys.executable, "-c", _PROGRAM, server.url, folder],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
        assert not list(Path(folder).iterdir())
    assert not set(threading.enumerate()) - threads_before
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(result, indent=2))
    assert len(server.received) == len(scripts)  # each answer was asked for once, in order
    assert result["control_mb"] > BOUND_MB, "the measurement must be able to see 100 MB"
    assert result["left"] == []  # no partial file stayed behind
    # An error body too large to read still leaves its status's error (and retries), read no further than the cap.
    assert result["outcomes"].pop("300 MiB error body (503)") == "ServerError"
    assert result["outcomes"] == {
        "300 MiB JSON, chunked": "ResponseTooLargeError",
        "300 MiB JSON, true Content-Length": "ResponseTooLargeError",
        "gzip bomb, 1 MiB to 1 GiB": "ResponseTooLargeError",
        "deeply nested JSON": "UnexpectedResponseError",
        "download announcing 10**15 bytes": "DownloadIntegrityError",
        "300 MiB download, small max_download_bytes": "DownloadIntegrityError",
        "300 MiB download to a file": f"written {expected['size']} {expected['sha256']}",
        "async: 300 MiB JSON, chunked": "ResponseTooLargeError",
        "async: gzip bomb, 1 MiB to 1 GiB": "ResponseTooLargeError",
        "worst JSON shape under the cap": f"parsed {(DEFAULT_MAX_RESPONSE_BYTES - 13) // 3 + 1} items",
    }
    assert result["growth_mb"] < BOUND_MB, result
