"""Downloads to S3 in a fresh process: memory stays flat, and what a SIGKILL leaves (an open multipart upload).

The probe is a separate Python process talking to the sandbox (in this process) and to moto's S3 server (in
its own); it inherits the session's AWS environment and the ``moto_s3`` Airflow connection.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.version_compat import object_storage_paths_work
from tests.object_storage.conftest import BUCKET
from tests.support.probes import printed_result, run_without_connection
from tests.support.reports import ready_report
from tests.support.s3 import CONN_ID, objects, open_uploads

pytestmark = pytest.mark.skipif(
    not object_storage_paths_work(),
    reason="ObjectStoragePath refuses every protocol on Airflow 3.0 with universal-pathlib 0.3",
)
MIB = 1024 * 1024
BOUND_MB = 64

_PROBE = textwrap.dedent(
    """
    import json, sys

    import httpx
    from airflow_provider_analytics.destinations._download import download_report_to
    from airflow_provider_analytics.wire.client import AnalyticsClient
    from airflow_provider_analytics.wire.config import ClientConfig

    def peak_kib():
        # VmHWM: this process's own peak RSS (ru_maxrss after fork+exec may start at the parent's peak).
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

    args = json.loads(sys.argv[1])
    config = ClientConfig(base_url=args["base_url"], token=args["token"], timeout=60.0)
    with AnalyticsClient(config) as client:
        if args.get("warmup_id"):  # every code path (s3fs, the connection, a multipart upload) warmed up
            download_report_to(client, args["warmup_id"], args["warmup_uri"], overwrite=True)
        before = peak_kib()
        print("STARTED", flush=True)
        result = download_report_to(client, args["report_id"], args["uri"], overwrite=True)
        after = peak_kib()
    print("RESULT " + json.dumps({"before_kib": before, "after_kib": after, **result.to_dict()}))
    """
)


def probe_args(sandbox: SandboxServer, report_id: str, uri: str, **more: Any) -> list[str]:
    args = {"base_url": sandbox.base_url, "token": sandbox.token, "report_id": report_id, "uri": uri, **more}
    return [sys.executable, "-c", _PROBE, json.dumps(args)]


def test_200_mib_to_s3_in_flat_memory(hook: AnalyticsHook, sandbox: SandboxServer, s3: Any) -> None:
    warmup = ready_report(hook, sandbox, format="csv", name="warmup", parameters={"rows": 300_000})
    big = ready_report(hook, sandbox, format="csv", name="big", parameters={"rows": 4_900_000})
    assert big["size_bytes"] >= 200 * MIB, big["size_bytes"]
    # The warm-up goes through the same connection: another one builds its own S3 client, whose service model
    # (about 30 MB) would otherwise be loaded inside the measured window on universal-pathlib 0.2.
    argv = probe_args(
        sandbox,
        big["id"],
        f"s3://{CONN_ID}@exports/big/",
        warmup_id=warmup["id"],
        warmup_uri=f"s3://{CONN_ID}@exports/w/",
    )

    result = printed_result(run_without_connection(argv, timeout=240).stdout)

    grew_mb = (result["after_kib"] - result["before_kib"]) / 1024
    print(f"peak RSS grew {grew_mb:.1f} MB for {big['size_bytes'] / MIB:.0f} MiB")  # shown with -s
    assert grew_mb <= BOUND_MB, f"peak RSS grew {grew_mb:.0f} MB for a {big['size_bytes'] / MIB:.0f} MiB download"
    assert result["sha256"] == big["sha256"]
    assert objects(s3, BUCKET)["big/big.csv"] == big["size_bytes"]
    assert open_uploads(s3, BUCKET) == []


def test_sigkill_leaves_an_open_upload_and_no_object_and_a_rerun_succeeds(
    hook: AnalyticsHook, sandbox: SandboxServer, s3: Any
) -> None:
    report = ready_report(hook, sandbox, format="csv", name="slow", parameters={"rows": 300_000})
    headers = {"Content-Type": "text/csv", "Content-Disposition": 'attachment; filename="slow.csv"'}
    # 40 MiB trickled over ~10 s: the first 8 MiB part is uploaded well before the end.
    sandbox.state.inject(
        Fault.stream(
            headers=headers, chunk=b"x" * 65536, chunk_count=640, interval=0.015, content_length=640 * 65536,
            path="/download$",
        )
    )  # fmt: skip
    env = {key: value for key, value in os.environ.items() if key != "AIRFLOW_CONN_ANALYTICS_DEFAULT"}
    process = subprocess.Popen(
        probe_args(sandbox, report["id"], "s3://exports/daily/"),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not open_uploads(s3, BUCKET):
            assert process.poll() is None, "the probe ended before it started an upload"
            assert time.monotonic() < deadline, "no multipart upload was started"
            time.sleep(0.1)
    finally:
        if process.poll() is None:  # still running (poll() reaped it otherwise: its pid may be reused)
            os.kill(process.pid, signal.SIGKILL)
        process.wait(10)

    # What a killed task leaves: no object anyone can see, and an open multipart upload (billed until a
    # bucket lifecycle rule, AbortIncompleteMultipartUpload, clears it: docs/object-storage.md).
    assert objects(s3, BUCKET) == {}
    assert open_uploads(s3, BUCKET) == ["daily/slow.csv"]

    result = printed_result(run_without_connection(probe_args(sandbox, report["id"], "s3://exports/daily/")).stdout)

    assert result["sha256"] == report["sha256"]
    body = s3.get_object(Bucket=BUCKET, Key="daily/slow.csv")["Body"].read()
    assert hashlib.sha256(body).hexdigest() == report["sha256"]
    assert objects(s3, BUCKET) == {"daily/slow.csv": report["size_bytes"]}
