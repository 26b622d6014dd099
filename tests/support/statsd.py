"""A real StatsD server on loopback (one UDP socket) and the lines it reads: no pytest, no Airflow.

The metrics tests read it through tests/support/metrics.py, which re-exports these names; ``bench/ratelimit.py``
uses it as the StatsD server of its waits process, for the whole run.

What arrived is read without waiting on a clock: :meth:`StatsdListener.read` sends the socket a marker and reads
until the marker comes. Loopback delivers a datagram into the receiving socket's queue during ``sendto``, so
everything sent before the marker is in the queue before it. Each datagram keeps its arrival time: the kernel's
receive timestamp (``SO_TIMESTAMP``) where the platform has it, so a datagram read late still has the time it came;
elsewhere the time it was read. For a long run, :meth:`StatsdListener.start` reads in a thread, so the socket's
queue never fills (the kernel drops what does not fit).
"""

from __future__ import annotations

import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field

__all__ = ["AIRFLOW_PREFIX", "MARKER", "Metric", "StatsdListener", "parse", "statsd_environment"]

MARKER = b"tests.marker:1|c"
# Airflow's own statsd_prefix, before the provider's analytics_platform.
AIRFLOW_PREFIX = "airflow"
# SO_TIMESTAMP of <asm-generic/socket.h> (the same on x86-64 and arm64); Python's socket module does not name it.
_SO_TIMESTAMP = getattr(socket, "SO_TIMESTAMP", 29 if sys.platform == "linux" else None)
_TIMEVAL = struct.Struct("@ll")  # the ancillary data it adds to each datagram: struct timeval
# The queue asked for when reading in a thread: a burst of thousands of datagrams fits while the thread waits for a
# core (the kernel caps it at net.core.rmem_max).
_BACKGROUND_BUFFER = 4 * 1024 * 1024


def statsd_environment(port: int, *, on: bool = True) -> dict[str, str]:
    """Airflow's ``[metrics]``, as environment variables, pointed at a listener on ``port`` with tags after the name.

    :param port: the listener's port on ``127.0.0.1``.
    :param on: switch metrics on (``statsd_on``), or leave them off with the listener named all the same.
    """
    return {
        "AIRFLOW__METRICS__STATSD_ON": str(on),
        "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
        "AIRFLOW__METRICS__STATSD_PORT": str(port),
        "AIRFLOW__METRICS__STATSD_PREFIX": AIRFLOW_PREFIX,
        "AIRFLOW__METRICS__STATSD_INFLUXDB_ENABLED": "True",
        # 2.11 warns (RemovedInAirflow3Warning) at every backend it builds with the basic name validator; 3.x only
        # has the pattern-matching one and ignores the option.
        "AIRFLOW__METRICS__METRICS_USE_PATTERN_MATCH": "True",
    }


@dataclass(frozen=True)
class Metric:
    """One StatsD line as Airflow sends it with ``statsd_influxdb_enabled`` (tags after the name).

    :param name: the metric's name, Airflow's prefix included.
    :param tags: its tags.
    :param value: the value, as sent.
    :param type: ``c`` (counter), ``ms`` (timer) or ``g`` (gauge).
    :param at: when its datagram arrived (epoch seconds); not part of equality.
    """

    name: str
    tags: dict[str, str] = field(hash=False)
    value: float
    type: str
    at: float = field(default=0.0, compare=False)


def parse(line: str, at: float = 0.0) -> Metric:
    """Read ``name,tag=value,...:value|type`` (and an optional ``|@rate``).

    :param line: one line of a datagram.
    :param at: when it arrived (epoch seconds).
    """
    head, _, rest = line.rpartition(":")
    name, *pairs = head.split(",")
    value, kind, *_ = rest.split("|")
    return Metric(name, dict(pair.split("=", 1) for pair in pairs), float(value), kind, at)


class StatsdListener:
    """A StatsD server on ``127.0.0.1``: one UDP socket on a free port."""

    def __init__(self) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.port: int = self.socket.getsockname()[1]
        self.raw: list[bytes] = []  # every datagram read, in order
        self.arrived: list[float] = []  # when each of them arrived (epoch seconds)
        self._stamped = False
        if _SO_TIMESTAMP is not None:
            try:
                self.socket.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMP, 1)
                self._stamped = True
            except OSError:
                pass
        self._read = 0  # datagrams :meth:`read` has returned the metrics of
        self._thread: threading.Thread | None = None

    def _receive(self) -> tuple[bytes, float]:
        """The next datagram and when it arrived."""
        if not self._stamped:
            return self.socket.recv(65536), time.time()
        datagram, ancillary, _, _ = self.socket.recvmsg(65536, socket.CMSG_SPACE(_TIMEVAL.size))
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMP and len(data) >= _TIMEVAL.size:
                seconds, microseconds = _TIMEVAL.unpack_from(data)
                return datagram, seconds + microseconds / 1e6
        return datagram, time.time()

    def _drain(self) -> None:
        """Read datagrams until the marker."""
        while True:
            datagram, at = self._receive()
            if datagram == MARKER:
                return
            self.raw.append(datagram)
            self.arrived.append(at)

    def start(self) -> None:
        """Read in a thread from now on (a long run: the socket's queue never fills); :meth:`read` stops it."""
        if self._thread is None:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _BACKGROUND_BUFFER)
            self._thread = threading.Thread(target=self._drain, name="statsd-listener", daemon=True)
            self._thread.start()

    def read(self) -> list[Metric]:
        """Every metric that arrived since the last read, each with its arrival time (their datagrams also kept in
        :attr:`raw`, their arrival times in :attr:`arrived`); it stops the thread of :meth:`start`."""
        self.socket.sendto(MARKER, ("127.0.0.1", self.port))
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        else:
            self._drain()
        metrics = []
        for datagram, at in zip(self.raw[self._read :], self.arrived[self._read :], strict=True):
            metrics += [parse(line, at) for line in datagram.decode().splitlines() if line]
        self._read = len(self.raw)
        return metrics

    def dropped(self) -> int | None:
        """Datagrams the kernel dropped because the socket's queue was full (Linux: ``/proc/net/udp``); ``None``
        where that is not known."""
        try:
            with open("/proc/net/udp") as table:
                next(table)
                for line in table:
                    fields = line.split()
                    if int(fields[1].rsplit(":", 1)[1], 16) == self.port:
                        return int(fields[-1])
        except (OSError, ValueError, IndexError, StopIteration):
            return None
        return None

    def close(self) -> None:
        """Close the socket (after :meth:`read`, when a thread reads)."""
        self.socket.close()
