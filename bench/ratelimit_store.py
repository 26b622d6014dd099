"""The shared store of a ``bench/ratelimit.py`` run: a throw-away ``redis-server`` on loopback and what it did.

A run with the store starts its own server (a free loopback port, no persistence, pinned to the platform's CPU so
that its work is not the waits'), hands its URL to every waits process as the Airflow connection the analytics
connection's ``rate_limit_redis_conn_id`` names, reads ``INFO`` when the window starts and ends, and stops the
server by its pid. ``window_figures`` turns the two readings into the store's cost over the window: commands per
second, the Redis-side microseconds per call (in all and for the busiest commands), its CPU share, its clients.
``INFO`` is read over a socket of its own (RESP by hand: four lines), so the reading adds two ``INFO`` calls a
window, which are left out of the figures.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchlib import started

# The sections read at each end of the window (Redis 7 takes several in one INFO).
SECTIONS = ("stats", "commandstats", "cpu", "clients", "keyspace", "latencystats")
CONN_ID = "rate_limits"  # the Airflow connection the analytics connection's extra names


def free_port() -> int:
    """A loopback TCP port nobody listens on (now)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class RedisStore:
    """One running ``redis-server``: its port, its URL, its ``INFO``.

    :param process: the server's process.
    :param port: the port it listens on (127.0.0.1).
    """

    def __init__(self, process: subprocess.Popen[str], port: int) -> None:
        self.process = process
        self.port = port

    @property
    def url(self) -> str:
        """The server as an Airflow connection URI (``AIRFLOW_CONN_RATE_LIMITS``): database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    def command(self, *words: str) -> bytes:
        """Send one command; its reply (a simple or bulk string) as bytes."""
        request = f"*{len(words)}\r\n" + "".join(f"${len(word)}\r\n{word}\r\n" for word in words)
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as connection:
            connection.sendall(request.encode())
            reader = connection.makefile("rb")
            head = reader.readline()
            if head.startswith(b"$"):
                size = int(head[1:])
                return reader.read(size + 2)[:size] if size >= 0 else b""
            if head.startswith(b"-"):
                raise RuntimeError(f"redis answered {head.decode(errors='replace').strip()}")
            return head.rstrip(b"\r\n")[1:]

    def info(self) -> dict[str, Any]:
        """``INFO`` of :data:`SECTIONS`: each ``key:value`` line, values of ``a=1,b=2`` form as dicts of floats."""
        out: dict[str, Any] = {"at": time.monotonic()}
        for line in self.command("INFO", *SECTIONS).decode(errors="replace").splitlines():
            key, sep, value = line.partition(":")
            if not sep or line.startswith("#"):
                continue
            if key.startswith(("cmdstat_", "latency_percentiles_usec_")) or (key.startswith("db") and "=" in value):
                pairs = (pair.partition("=") for pair in value.split(","))
                out[key] = {name: _number(number) for name, _, number in pairs}
            else:
                out[key] = _number(value)
        return out


def _number(text: str) -> Any:
    with contextlib.suppress(ValueError):
        return float(text)
    return text


@contextlib.contextmanager
def redis_store(folder: Path, cpu: int) -> Iterator[RedisStore]:
    """A fresh ``redis-server`` for one run, pinned to ``cpu``, without persistence; stopped by its pid after.

    :param folder: its working folder (a temp folder of the run).
    :param cpu: the CPU it runs on.
    """
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed: make bench installs it (apt-get install redis-server)")
    port = free_port()
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    argv += ["--dir", str(folder), "--daemonize", "no", "--loglevel", "warning"]
    with (folder / f"redis-{port}.log").open("w") as log, started(argv, stdout=log, stderr=log) as process:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(process.pid, {cpu})
        store = RedisStore(process, port)
        deadline = time.monotonic() + 20
        while True:
            try:
                if store.command("PING") == b"PONG":
                    break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"redis-server did not start (exit {process.poll()}); see its log in {folder}")
            time.sleep(0.05)
        yield store


def _delta(before: dict[str, Any], after: dict[str, Any], key: str, field: str | None = None) -> float:
    def value(info: dict[str, Any]) -> float:
        item = info.get(key, 0.0)
        number = item.get(field, 0.0) if isinstance(item, dict) and field else item
        return float(number) if isinstance(number, float | int) else 0.0

    return value(after) - value(before)


def window_figures(before: dict[str, Any], after: dict[str, Any], window: float) -> dict[str, Any]:
    """What the store did between two :meth:`RedisStore.info` readings (the bench's own ``INFO`` calls left out).

    :param before: the reading when the window started.
    :param after: the reading when it ended.
    :param window: the window's length in seconds.
    """
    commands: dict[str, tuple[float, float]] = {}
    for key in after:
        if key.startswith("cmdstat_") and key != "cmdstat_info":
            calls = _delta(before, after, key, "calls")
            if calls > 0:
                commands[key.removeprefix("cmdstat_")] = (calls, _delta(before, after, key, "usec"))
    calls = sum(c for c, _ in commands.values())
    usec = sum(u for _, u in commands.values())
    busiest = sorted(commands.items(), key=lambda item: -item[1][0])[:4]
    latency = {}
    for name, _ in busiest:
        percentiles = after.get(f"latency_percentiles_usec_{name}", {})
        if isinstance(percentiles, dict) and "p99" in percentiles:
            latency[name] = percentiles["p99"]
    cpu = _delta(before, after, "used_cpu_sys") + _delta(before, after, "used_cpu_user")
    keys = after.get("db0", {})
    return {
        "commands_per_s": calls / window if window else 0.0,
        "usec_per_call": usec / calls if calls else None,
        "commands": {name: {"per_s": c / window, "usec_per_call": u / c} for name, (c, u) in busiest},
        "p99_usec_since_start": latency,  # latencystats are cumulative: since the server started
        "cpu_s": cpu,
        "cpu_share": cpu / window if window else 0.0,
        "clients": int(after.get("connected_clients", 1)) - 1,  # the reading's own connection left out
        "connections": int(_delta(before, after, "total_connections_received")) - 1,
        "keys": int(keys.get("keys", 0)) if isinstance(keys, dict) else 0,
    }
