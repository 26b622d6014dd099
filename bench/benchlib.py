"""Helpers shared by the benchmark scripts: environment, CPU pinning, memory, processes, TLS, tables.

Nothing here measures anything by itself; each script's docstring says what it measures and how.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
PYTHON = sys.executable


def airflow_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a child needs before it imports airflow: a throw-away home, no examples, test mode.

    Bytecode is neither written nor read next to the sources (this machine sets ``PYTHONDONTWRITEBYTECODE``);
    pass ``PYTHONPYCACHEPREFIX`` (a temp folder) in ``extra`` to cache it there.
    """
    env = dict(os.environ)
    for name in ("AIRFLOW_CONN_ANALYTICS_DEFAULT", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX"):
        env.pop(name, None)
    env.update(
        {"AIRFLOW_HOME": str(home), "AIRFLOW__CORE__UNIT_TEST_MODE": "True", "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    )
    env.update(extra or {})
    return env


def pin(cpu: int) -> None:
    """Run the calling process on one CPU only (when the machine has it)."""
    if cpu in os.sched_getaffinity(0) or cpu < (os.cpu_count() or 1):
        os.sched_setaffinity(0, {cpu})


def status_kb(field: str, pid: int | str = "self") -> int:
    """A ``/proc/<pid>/status`` memory field (``VmRSS``, ``VmHWM``) in KiB; 0 when the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def process_cpu(pid: int) -> float:
    """Seconds of CPU (user and system, all threads) process ``pid`` has used, from ``/proc``; 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14 and 15)


def memory_available_kb() -> int:
    """``MemAvailable`` of ``/proc/meminfo`` in KiB: what new processes can take without swapping."""
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return 0


def cpu_busy(cpu: int) -> float:
    """Seconds CPU ``cpu`` has spent busy (user, system, irq, steal...) since boot, from ``/proc/stat``."""
    with open("/proc/stat") as stat:
        for line in stat:
            if line.startswith(f"cpu{cpu} "):
                fields = [int(value) for value in line.split()[1:]]
                return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # not idle, iowait
    return 0.0


def wait_quiet(limit: float = 45.0, threshold: float = 0.15) -> tuple[float, float]:
    """Wait (up to ``limit`` s) until both CPUs were under ``threshold`` busy for one second: the machine is shared.

    :return: the seconds waited and the busiest CPU's share in the last second sampled.
    """
    began = time.monotonic()
    while True:
        before = [cpu_busy(cpu) for cpu in (0, 1)]
        time.sleep(1.0)
        busiest = max(cpu_busy(cpu) - was for cpu, was in zip((0, 1), before, strict=False))
        if busiest < threshold or time.monotonic() - began >= limit:
            return time.monotonic() - began, busiest


def stop(process: subprocess.Popen[str] | subprocess.Popen[bytes] | None, grace: float = 5.0) -> None:
    """Stop one process started by a script, by its pid: terminate, then kill if it does not end."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextlib.contextmanager
def started(command: Sequence[str], **popen: object) -> Iterator[subprocess.Popen[str]]:
    """``Popen`` as a context manager that always stops the process, on errors and Ctrl-C too."""
    process: subprocess.Popen[str] = subprocess.Popen(list(command), text=True, **popen)  # type: ignore[call-overload]
    try:
        yield process
    finally:
        stop(process)


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (``fraction`` in [0, 1]); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))]


def median(values: Sequence[float]) -> float:
    """The median; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def machine() -> str:
    """One line naming the machine, the interpreter, Airflow, httpx and the date."""
    cpu = "unknown CPU"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as info:
        cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), cpu)
    versions = {name: metadata.version(name) for name in ("apache-airflow", "httpx")}
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"nproc {os.cpu_count()} ({cpu}), Python {platform.python_version()}, "
        f"Airflow {versions['apache-airflow']}, httpx {versions['httpx']}, {platform.system()} "
        f"{platform.release()}, measured {today}"
    )


def make_tls(folder: Path) -> tuple[Path, Path, Path]:
    """A throw-away CA and a server certificate for 127.0.0.1 and localhost (ECDSA P-256), as PEM files.

    :return: the CA certificate, the server certificate and the server key.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bench CA")])

    def builder(subject: x509.Name, public: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(ca_name)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
        )

    ca = (
        builder(ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )  # key_cert_sign, crl_sign
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    server = (
        builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]), key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = folder / "ca.pem", folder / "server.pem", folder / "server-key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths
