"""A large report download streams to disk in flat memory, measured in a fresh process."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.probes import printed_result, run_without_connection
from tests.support.reports import ready_report

_MEMORY_PROBE = textwrap.dedent(
    """
    import json, resource, sys

    import httpx
    from airflow.providers.common.compat.sdk import ObjectStoragePath  # noqa: F401  (warms Destination.parse)
    from airflow_provider_analytics.destinations._download import download_report_to
    from airflow_provider_analytics.wire.client import AnalyticsClient
    from airflow_provider_analytics.wire.config import ClientConfig

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
    args = {
        "base_url": sandbox.base_url,
        "token": sandbox.token,
        "warmup_id": warmup["id"],
        "warmup_path": str(tmp_path / "warmup.csv"),
        "report_id": big["id"],
        "path": str(target),
    }
    try:
        completed = run_without_connection([sys.executable, "-c", _MEMORY_PROBE, json.dumps(args)])
        measured = printed_result(completed.stdout)
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
