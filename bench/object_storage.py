"""A 1 GiB report to S3 (moto's server on loopback): the provider's streamed upload vs download-then-put_file.

How: the 1 GiB file and its headers come from ``download.py`` (same generator, same ``sendfile`` server on
CPU 1); moto's S3 server runs in its own process. Each way runs ROUNDS times, round-robin, in its own
process pinned to CPU 0: *provider* calls ``download_report_to(client, "rp_bench", "s3://bench/p/")`` (the
bytes stream into the final key in a multipart upload completed once verified); *baseline* calls
``download_report_to`` into a local temp folder, then ``put_file`` of that file to the same server through the
same s3fs filesystem, and deletes the local copy. Time: the whole transfer inside the child (no interpreter
start-up); memory: peak RSS of the child (``wait4``) and VmHWM minus VmRSS just before the transfer.
Writes ``bench/results/object_storage.md``; deletes every object, file and process it made; asserts nothing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlib import PYTHON, RESULTS, airflow_env, machine, md_table, median, started, wait_quiet
from download import SIZE, generate, run_child

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.s3 import MotoServer

ROUNDS = 2
TARGET_RATIO = 1.0
CHILD = """
import os, shutil, sys, tempfile, time
os.sched_setaffinity(0, {0})
import airflow.sdk, airflow_provider_analytics.operators.reports  # loaded in a worker before any download
from airflow.providers.common.compat.sdk import ObjectStoragePath
from airflow_provider_analytics.destinations._download import download_report_to
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.config import ClientConfig
base, way = sys.argv[1], sys.argv[2]
client = AnalyticsClient(ClientConfig(base_url=base, token="bench-token"))
fs = ObjectStoragePath("s3://bench/").fs  # the filesystem both ways use, built before the clock starts
rss = int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmRSS:")))
t = time.perf_counter()
if way == "provider":
    result = download_report_to(client, "rp_bench", "s3://bench/provider/")
else:
    folder = tempfile.mkdtemp(prefix="bench-put-")
    result = download_report_to(client, "rp_bench", folder + "/")
    fs.put_file(result.uri, "bench/baseline/bench.pdf")
    shutil.rmtree(folder)
seconds = time.perf_counter() - t
hwm = int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:")))
print("RESULT", seconds, result.size, rss, hwm)
"""


def one(way: str, base: str, tmp: Path, env: dict[str, str], moto: MotoServer) -> dict[str, float]:
    text, _, rss = run_child([PYTHON, "-c", CHILD, base, way], env, tmp)
    fields = text.split("RESULT", 1)[1].split()
    client = moto.client()
    listed = {o["Key"]: o["Size"] for o in client.list_objects_v2(Bucket="bench").get("Contents", [])}
    for key in listed:
        client.delete_object(Bucket="bench", Key=key)
    if list(listed.values()) != [SIZE]:
        raise SystemExit(f"{way} left {listed} in the bucket, not one object of {SIZE} bytes")
    seconds = float(fields[0])
    return {"seconds": seconds, "mbps": SIZE / seconds / 1e6, "peak_mb": rss / 1024,
            "growth_mb": (int(fields[3]) - int(fields[2])) / 1024}  # fmt: skip


def main() -> None:
    RESULTS.mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-object-storage-"))
    runs: dict[str, list[dict[str, float]]] = {"baseline": [], "provider": []}
    try:
        reports = {"rp_bench": generate(tmp / "report.pdf", SIZE)}
        download = str(Path(__file__).with_name("download.py"))
        with (
            MotoServer() as moto,
            started([PYTHON, download, "serve", "--reports", json.dumps(reports)], stdout=subprocess.PIPE) as server,
        ):
            assert server.stdout is not None
            base = f"http://127.0.0.1:{server.stdout.readline().split()[1]}"
            moto.client().create_bucket(Bucket="bench")
            env = airflow_env(tmp / "airflow-home", {"PYTHONPYCACHEPREFIX": str(tmp / "pycache"), **moto.env()})
            for _ in range(ROUNDS):
                for way in runs:
                    wait_quiet(limit=10)
                    runs[way].append(one(way, base, tmp, env, moto))
                    print(f"{way:<8} {json.dumps({k: round(v, 1) for k, v in runs[way][-1].items()})}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    write(runs)


def write(runs: dict[str, list[dict[str, float]]]) -> None:
    base = median([r["seconds"] for r in runs["baseline"]])
    rows = []
    for way, label in (("baseline", "download to disk, then `put_file`"), ("provider", "provider, streamed")):
        seconds = median([r["seconds"] for r in runs[way]])
        ratio = base / seconds
        verdict = f" (target {TARGET_RATIO:.1f}x)" if way == "provider" else ""
        rows.append([
            label, " / ".join(f"{r['seconds']:.1f}" for r in runs[way]), f"**{seconds:.1f}**",
            f"{ratio:.2f}x{verdict}", f"{max(r['peak_mb'] for r in runs[way]):.0f}",
            f"{max(r['growth_mb'] for r in runs[way]):.0f}",
        ])  # fmt: skip
    text = "\n".join([
        "# A 1 GiB report to S3 (moto's server on loopback)", "", machine(), "",
        md_table(["way", "seconds per run", "median s", "speed vs baseline", "peak RSS MB", "RSS growth MB"], rows),
        "", "Speed vs baseline: the baseline's median time over this row's (higher is faster). The baseline",
        "writes the whole file to local disk first; the provider streams into the upload as it receives and keeps",
        "no copy. moto keeps uploads in memory and on its own disk: a real S3 endpoint's figures differ.", "",
    ])  # fmt: skip
    (RESULTS / "object_storage.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
