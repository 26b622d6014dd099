"""A 1 GiB report download on loopback: curl, a plain httpx stream loop and the provider's download_report_to.

How: a 1 GiB file of random-ish bytes (one 16 MiB ``os.urandom`` block, rotated differently for each
16 MiB chunk, so nothing large is held in memory) and a 64 MiB control are written once into a temp folder
with their sha-256. A minimal plain-HTTP server (``download.py serve``, a thread per connection, pinned to
CPU 1) answers ``GET /v1/reports/<id>/download`` with ``os.sendfile`` and the contract's headers:
``Content-Type: application/pdf``, ``Content-Length``, a strong ``ETag``, ``Content-Disposition:
attachment; filename="bench.pdf"``, ``Repr-Digest: sha-256=:<base64>:`` (computed once); it never
compresses, so ``Accept-Encoding: identity`` is always honoured. After one warm-up each, every downloader
runs 3 times, round-robin, in its own process pinned to CPU 0, once the machine is quiet: ``curl -s -o``;
a Python child streaming with ``httpx.stream`` + ``iter_raw`` into a file; the same loop also hashing each
chunk with sha-256 (what verifying ``Repr-Digest`` costs); a Python child that imports ``airflow.sdk`` and
the reports operators (as a worker has) and calls the provider's ``download_report_to(AnalyticsClient(
ClientConfig(...)), "rp_bench", <folder>/)``. Speed: MB/s (10^6 bytes/s) of the transfer (Python children
time the download itself, without interpreter start-up; curl is timed as a process). Memory: peak RSS of
each process (``ru_maxrss`` from ``wait4``) and, for Python children, VmHWM at the end minus VmRSS just
before the download, for 1 GiB and for the 64 MiB control: flat when the two are alike.
Writes ``bench/results/download.md``; deletes the files and every copy; asserts nothing.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import http.server
import json
import os
import shutil
import socketserver
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from benchlib import PYTHON, RESULTS, airflow_env, machine, md_table, median, pin, started, wait_quiet

SIZE = 1 << 30
BLOCK = 16 << 20
ROUNDS = 3
SMALL = 64 << 20  # the control: a download of 1/16 the size must need the same memory
URL_PATH = "/v1/reports/{}/download"
TARGET_RATIO = 0.8

HTTPX_CHILD = """
import hashlib, os, sys, time, httpx
os.sched_setaffinity(0, {0})
url, out, digest = sys.argv[1], sys.argv[2], hashlib.sha256() if sys.argv[3] == "sha" else None
rss = int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmRSS:")))
t = time.perf_counter()
with httpx.stream("GET", url, headers={"Accept-Encoding": "identity"}) as r, open(out, "wb") as f:
    for chunk in r.iter_raw():
        f.write(chunk)
        if digest is not None:
            digest.update(chunk)
seconds = time.perf_counter() - t
hwm = int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:")))
print("RESULT", seconds, os.path.getsize(out), rss, hwm)
"""
PROVIDER_CHILD = """
import os, sys, time
os.sched_setaffinity(0, {0})
import airflow.sdk, airflow_provider_analytics.operators.reports  # loaded in a worker before any download
from airflow_provider_analytics.destinations._download import download_report_to
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.config import ClientConfig
base, out, report = sys.argv[1], sys.argv[2], sys.argv[3]
client = AnalyticsClient(ClientConfig(base_url=base, token="bench-token"))
rss = int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmRSS:")))
t = time.perf_counter()
result = download_report_to(client, report, out)
seconds = time.perf_counter() - t
hwm = int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:")))
print("RESULT", seconds, result.size, rss, hwm, result.uri)
"""


def generate(path: Path, size: int) -> dict[str, str]:
    """Write ``size`` random-ish bytes; return the file, its strong ETag and its Repr-Digest value."""
    block, digest = os.urandom(BLOCK), hashlib.sha256()
    with path.open("wb") as out:
        for index in range(size // BLOCK):
            shift = (index * 4099) % BLOCK
            chunk = block[shift:] + block[:shift]
            digest.update(chunk)
            out.write(chunk)
    encoded = base64.b64encode(digest.digest()).decode()
    return {"file": str(path), "etag": f'"{digest.hexdigest()[:32]}"', "digest": f"sha-256=:{encoded}:"}


class Handler(http.server.BaseHTTPRequestHandler):
    """Serves the one report with sendfile; nothing else."""

    protocol_version = "HTTP/1.1"
    reports: dict[str, dict[str, str]]

    def do_GET(self) -> None:
        meta = next((m for r, m in self.reports.items() if self.path == URL_PATH.format(r)), None)
        if meta is None:
            self.send_error(404)
            return
        file = Path(meta["file"])
        size = file.stat().st_size
        self.send_response(200)
        headers = {
            "Content-Type": "application/pdf",
            "Content-Length": str(size),
            "ETag": meta["etag"],
            "Content-Disposition": 'attachment; filename="bench.pdf"',
            "Repr-Digest": meta["digest"],
            "X-Request-Id": "req_bench",
        }
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()
        with file.open("rb") as source:
            offset = 0
            while offset < size:
                sent = os.sendfile(self.connection.fileno(), source.fileno(), offset, size - offset)
                if sent == 0:
                    break
                offset += sent

    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(reports: dict[str, dict[str, str]]) -> None:
    """The server process: pinned to CPU 1, prints its port, runs until stopped."""
    pin(1)
    Handler.reports = reports
    socketserver.ThreadingTCPServer.daemon_threads = True
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler) as server:
        print(f"PORT {server.server_address[1]}", flush=True)
        server.serve_forever()


def run_child(command: list[str], env: dict[str, str], tmp: Path) -> tuple[str, float, int]:
    """Run one downloader to its end; its stdout, wall seconds and peak RSS (KiB, from ``wait4``)."""
    out_path, err_path = tmp / "child.out", tmp / "child.err"
    began = time.perf_counter()
    with out_path.open("wb") as out, err_path.open("wb") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env, preexec_fn=lambda: pin(0))
    killer = threading.Timer(600, process.kill)  # a hard timeout for one download
    killer.start()
    try:
        _, status, usage = os.wait4(process.pid, 0)  # reaped here, so its rusage is this child's alone
        process.returncode = os.waitstatus_to_exitcode(status)
    finally:
        killer.cancel()
        if process.returncode is None:
            process.kill()
            process.wait()
    wall = time.perf_counter() - began
    if process.returncode:
        raise SystemExit(f"{command[0]} failed ({process.returncode}): {err_path.read_text(errors='replace')[-1500:]}")
    return out_path.read_text(), wall, usage.ru_maxrss


def one(tool: str, base: str, tmp: Path, env: dict[str, str], report: str = "rp_bench") -> dict[str, float]:
    """One download of ``report`` with ``tool``; the copy is deleted right after."""
    out, url = tmp / f"copy-{tool}", base + URL_PATH.format(report)
    expected = SIZE if report == "rp_bench" else SMALL
    if tool == "curl":
        _, wall, rss = run_child(["/usr/bin/curl", "-s", "-o", str(out), url], env, tmp)
        seconds, size, growth = wall, out.stat().st_size, 0.0
    else:
        if tool in ("httpx", "httpx_sha"):
            command = [PYTHON, "-c", HTTPX_CHILD, url, str(out), "sha" if tool == "httpx_sha" else "-"]
        else:
            out.mkdir()
            command = [PYTHON, "-c", PROVIDER_CHILD, base, f"{out}/", report]
        text, _, rss = run_child(command, env, tmp)
        fields = text.split("RESULT", 1)[1].split()
        seconds, size, growth = float(fields[0]), int(fields[1]), (int(fields[3]) - int(fields[2])) / 1024
    shutil.rmtree(out) if out.is_dir() else out.unlink()
    if size != expected:
        raise SystemExit(f"{tool} wrote {size} bytes of {report}, not {expected}")
    return {"mbps": size / seconds / 1e6, "seconds": seconds, "peak_mb": rss / 1024, "growth_mb": growth}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", default="run", choices=("run", "serve"))
    parser.add_argument("--reports", help="(serve) JSON: report id -> file, etag, digest")
    args = parser.parse_args()
    if args.mode == "serve":
        serve(json.loads(args.reports))
        return
    RESULTS.mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-download-"))
    runs: dict[str, list[dict[str, float]]] = {"curl": [], "httpx": [], "httpx_sha": [], "provider": []}
    small: dict[str, dict[str, float]] = {}
    try:
        began = time.perf_counter()
        reports = {"rp_bench": generate(tmp / "report.pdf", SIZE), "rp_small": generate(tmp / "small.pdf", SMALL)}
        os.sync()  # the copies must not compete with the generated file's writeback
        print(f"generated 1 GiB + 64 MiB in {time.perf_counter() - began:.1f} s")
        env = airflow_env(tmp / "airflow-home", {"PYTHONPYCACHEPREFIX": str(tmp / "pycache")})
        with started([PYTHON, __file__, "serve", "--reports", json.dumps(reports)], stdout=subprocess.PIPE) as server:
            assert server.stdout is not None
            base = f"http://127.0.0.1:{server.stdout.readline().split()[1]}"
            for tool in runs:  # warm-up, not counted: page cache, bytecode cache, AIRFLOW_HOME
                one(tool, base, tmp, env, "rp_small")
            for _ in range(ROUNDS):
                for tool in runs:
                    wait_quiet(limit=10)
                    runs[tool].append(one(tool, base, tmp, env))
                    print(f"{tool:<8} {json.dumps({k: round(v, 1) for k, v in runs[tool][-1].items()})}", flush=True)
            for tool in ("httpx", "provider"):
                small[tool] = one(tool, base, tmp, env, "rp_small")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    write(runs, small)


def write(runs: dict[str, list[dict[str, float]]], small: dict[str, dict[str, float]]) -> None:
    labels = {
        "curl": "`curl -s -o`",
        "httpx": "httpx stream loop (`iter_raw` + write)",
        "httpx_sha": "the same loop + sha-256 of each chunk",
        "provider": "provider `download_report_to` (verifies sha-256)",
    }
    curl = median([r["mbps"] for r in runs["curl"]])
    rows = []
    for tool, results in runs.items():
        speed = median([r["mbps"] for r in results])
        ratio = speed / curl
        target = (
            f" {'met' if ratio >= TARGET_RATIO else 'not met'} (target {TARGET_RATIO}x)" if tool == "provider" else ""
        )
        memory = "n/a (not a Python child)" if tool == "curl" else f"{max(r['growth_mb'] for r in results):.1f}"
        if tool in small:
            flat = max(r["growth_mb"] for r in results) <= small[tool]["growth_mb"] + 16
            memory += f" (64 MiB: {small[tool]['growth_mb']:.1f}): {'flat' if flat else 'GROWS with the file'}"
        per_run = " / ".join(f"{r['mbps']:.0f}" for r in results)
        peak = max(r["peak_mb"] for r in results)
        rows.append([labels[tool], per_run, f"**{speed:.0f}**", f"{ratio:.2f}x{target}", f"{peak:.0f}", memory])
        print(f"{tool}: median {speed:.0f} MB/s ({ratio:.2f}x curl), peak RSS {peak:.0f} MB, growth {memory}")
    out = [
        "# A 1 GiB report download on loopback\n\n",
        f"{machine()}. Plain HTTP on 127.0.0.1; server (`os.sendfile`) pinned to CPU 1, downloaders pinned to "
        f"CPU 0, {ROUNDS} runs each, round-robin, after one warm-up each. MB/s = 10^6 bytes/s. The provider's "
        "child imports `airflow.sdk` and the reports operators first, as a worker has. Generated by "
        "`bench/download.py`; see `bench/README.md`.\n\n",
        md_table(
            [
                "downloader",
                "MB/s per run",
                "median MB/s",
                "ratio to curl",
                "peak RSS MB",
                "RSS growth MB: 1 GiB (64 MiB)",
            ],
            rows,
        ),
        "\nRSS growth: VmHWM at the end minus VmRSS just before the download, in the downloading process, for the "
        "1 GiB file (largest of the runs) and for a 64 MiB control; *flat* when the 1 GiB download needs no more "
        "than the 64 MiB one (+16 MB).\n",
    ]
    (RESULTS / "download.md").write_text("".join(out))
    print(f"wrote {RESULTS / 'download.md'}")


if __name__ == "__main__":
    main()
