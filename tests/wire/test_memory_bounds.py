"""No answer can add more than ~100 MB to a client's memory: measured in a fresh process.

The client runs in a subprocess against the session's sandbox (so the server's memory is not counted);
the subprocess injects each hostile answer through the sandbox's admin endpoint, and reports the growth of
its peak RSS (``VmHWM``) over a warmed-up baseline. A control in the same process shows the measurement
can fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from airflow_provider_analytics.sandbox.server import SandboxServer

BOUND_MB = 100

_PROGRAM = textwrap.dedent(
    """
    import base64, json, shutil, sys, tempfile, zlib
    import httpx
    from airflow_provider_analytics.hooks.destinations import download_report_to
    from airflow_provider_analytics.wire import endpoints
    from airflow_provider_analytics.wire.client import AnalyticsClient
    from airflow_provider_analytics.wire.core import DEFAULT_MAX_RESPONSE_BYTES, ClientConfig
    from airflow_provider_analytics.wire.errors import AnalyticsError
    from airflow_provider_analytics.wire.retry import RetryPolicy

    def peak_mb():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024

    base_url, token = sys.argv[1], sys.argv[2]
    admin = httpx.Client(base_url=base_url, timeout=30)

    def inject(**fault):
        admin.post("/_sandbox/faults", json={"times": 1, **fault}).raise_for_status()

    def client(**settings):
        retry = RetryPolicy(max_retries=0)
        return AnalyticsClient(ClientConfig(base_url=base_url, token=token, timeout=120, retry=retry, **settings))

    def bomb(decoded):
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)
        parts, block = [packer.compress(b'{"data": ["')], b"x" * (1 << 20)
        parts += [packer.compress(block) for _ in range(decoded >> 20)]
        return b"".join(parts) + packer.compress(b'"]}') + packer.flush()

    JSON = {"Content-Type": "application/json"}
    PDF = {"Content-Type": "application/pdf", "ETag": '"big"'}
    big_json = dict(
        kind="stream", headers=JSON, prefix='{"data": ["', chunk="x" * 65536, chunk_count=4800, path="/v1/charts"
    )
    worst = b"[" + b"{}," * (DEFAULT_MAX_RESPONSE_BYTES // 3 - 2) + b"{}]"
    steps = [
        ("300 MiB JSON, chunked", big_json, lambda c: c.call(endpoints.list_charts())),
        ("300 MiB JSON, true Content-Length", {**big_json, "content_length": 11 + 65536 * 4800},
         lambda c: c.call(endpoints.list_charts())),
        ("gzip bomb, 1 GiB inflated", dict(kind="respond", code=200, headers={**JSON, "Content-Encoding": "gzip"},
         body_b64=base64.b64encode(bomb(1 << 30)).decode(), path="/v1/charts"),
         lambda c: c.call(endpoints.list_charts())),
        ("worst JSON under the cap", dict(kind="respond", code=200, headers=JSON,
         body_b64=base64.b64encode(worst).decode(), path="/v1/charts"), lambda c: c.call(endpoints.list_charts())),
        ("deeply nested JSON", dict(kind="respond", code=200, headers=JSON, body="[" * 500000 + "]" * 500000,
         path="/v1/charts"), lambda c: c.call(endpoints.list_charts())),
        ("download announcing 10**15 bytes", dict(kind="stream", headers=PDF, content_length=10**15, chunk="x" * 65536,
         chunk_count=100000, path="/download$"), None),
        ("200 MiB download to disk", dict(kind="stream", headers=PDF, content_length=65536 * 3200, chunk="y" * 65536,
         chunk_count=3200, path="/download$"), None),
    ]
    folder = tempfile.mkdtemp(prefix="apa-memory-")
    outcomes = {}
    try:
        with client() as warm:
            warm.call(endpoints.list_charts())
        baseline = peak_mb()
        for name, fault, action in steps:
            inject(**fault)
            with client() as c:
                try:
                    if action is None:
                        result = download_report_to(c, "rp_memory", folder + "/", overwrite=True)
                        outcomes[name] = f"written {result.size}"
                    else:
                        action(c)
                        outcomes[name] = "parsed"
                except AnalyticsError as error:
                    outcomes[name] = type(error).__name__
        growth = peak_mb() - baseline
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    before_control = peak_mb()
    ballast = bytearray(150 * 1024 * 1024)
    ballast[::4096] = b"x" * len(ballast[::4096])
    print(json.dumps({"growth_mb": growth, "control_mb": peak_mb() - before_control, "outcomes": outcomes}))
    """
)


def test_no_answer_adds_more_than_100_mb(sandbox: SandboxServer) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM, sandbox.base_url, sandbox.token],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(result, indent=2))
    assert result["control_mb"] > BOUND_MB, "the measurement must be able to see 100 MB"
    outcomes = result["outcomes"]
    assert outcomes["300 MiB JSON, chunked"] == "ResponseTooLargeError"
    assert outcomes["300 MiB JSON, true Content-Length"] == "ResponseTooLargeError"
    assert outcomes["gzip bomb, 1 GiB inflated"] == "ResponseTooLargeError"
    assert outcomes["deeply nested JSON"] == "UnexpectedResponseError"
    assert outcomes["download announcing 10**15 bytes"] == "DownloadIntegrityError"
    assert outcomes["200 MiB download to disk"] == f"written {65536 * 3200}"
    assert result["growth_mb"] < BOUND_MB, result
