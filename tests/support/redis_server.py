"""A real ``redis-server`` on loopback for the tests of the shared rate limiter: no pytest, no Airflow.

Started with no persistence in a folder of its own, on a free port, and stopped by its pid (also when a test fails).
A test can make it go away the ways a deployment's Redis does: :meth:`RedisServer.stop` (down, connections
refused), :meth:`RedisServer.freeze` (SIGSTOP: alive, accepting nothing, answering nothing: a slow or hung Redis),
:meth:`RedisServer.restart` (back on the same port, empty) and :meth:`RedisServer.flush` (its data gone).
``redis-server`` comes from the machine (Debian's package); ``make test`` installs it when it is missing.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

import redis

__all__ = ["RedisServer", "free_port"]


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedisServer:
    """One ``redis-server`` process on ``127.0.0.1`` (use it as a context manager).

    :param password: ``requirepass``, if any.
    """

    def __init__(self, password: str | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed: make test installs it (apt-get install redis-server)")
        self.binary = binary
        self.password = password
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="apa-redis-"))
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def start(self) -> None:
        """Start the server (again, on the same port) and wait until it answers."""
        argv = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        argv += ["--dir", str(self.folder)] + (["--requirepass", self.password] if self.password else [])
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not self.answers():
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.02)

    def stop(self) -> None:
        """Stop the server by its pid (a frozen one is thawed first, so that it can end)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)
            self.process.kill()
        self.process.wait(timeout=10)
        self.process = None

    def restart(self) -> None:
        """Stop the server and start an empty one on the same port."""
        self.stop()
        self.start()

    def freeze(self) -> None:
        """SIGSTOP: the server holds its connections and answers nothing (a hung or very slow Redis)."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT: a frozen server answers again."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def flush(self) -> None:
        """Drop every key (a FLUSHALL, as an operator or a restart without persistence does)."""
        with self.client() as client:
            client.flushall()

    def keys(self) -> list[str]:
        """Every key's name."""
        with self.client() as client:
            return sorted(key.decode() for key in client.keys("*"))

    def answers(self) -> bool:
        """Whether the server answers a PING now."""
        try:
            with self.client(timeout=0.5) as client:
                return bool(client.ping())
        except (redis.RedisError, OSError):
            return False

    def client(self, timeout: float = 5.0) -> redis.Redis:
        """A redis-py client of the server (close it: use it as a context manager)."""
        return redis.Redis(
            port=self.port, password=self.password, socket_timeout=timeout, socket_connect_timeout=timeout
        )

    @property
    def address(self) -> str:
        """``redis://127.0.0.1:<port>/0``."""
        return f"redis://127.0.0.1:{self.port}/0"
