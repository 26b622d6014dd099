"""A small hostile HTTP/1.1 server for tests: raw sockets, scripted answers, nothing validated.

Each request gets the next :class:`Script` (the last one repeats). A script's status line and header
lines go out byte for byte as written (odd, lying or broken headers included), optionally trickled a
byte at a time; its body is bytes, or chunks from an iterable (so hundreds of MiB can be generated
without being held). Framing is the script's business: add ``Content-Length`` or use :func:`chunked`,
or close the connection after the body. Use the server as a context manager; on exit it stops
accepting, shuts every client socket and asserts that its threads ended.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from types import TracebackType

Body = bytes | Iterable[bytes] | Callable[[], Iterable[bytes]]
_HEAD_LIMIT = 64 * 1024


@dataclass(frozen=True)
class Script:
    """One scripted answer.

    :param status: the status line, without CRLF.
    :param headers: raw header lines, without CRLF, sent as they are.
    :param body: bytes, an iterable of chunks (read once), or a function returning a fresh iterable.
    :param chunk_delay: seconds to wait before each body chunk.
    :param trickle: seconds to wait before each byte of the status line and headers (0: send them whole).
    :param close: close the connection after the body (else wait for the next request on it).
    """

    status: bytes = b"HTTP/1.1 200 OK"
    headers: tuple[bytes, ...] = ()
    body: Body = b""
    chunk_delay: float = 0.0
    trickle: float = 0.0
    close: bool = True

    def chunks(self) -> Iterable[bytes]:
        """The body's chunks, from a fresh iterable when the body is a function."""
        if isinstance(self.body, bytes):
            return (self.body,)
        return self.body() if callable(self.body) else self.body


def json_script(body: bytes, status: bytes = b"HTTP/1.1 200 OK", *, trickle: float = 0.0, close: bool = True) -> Script:
    """A well-framed JSON answer (``Content-Length`` set)."""
    headers = (b"Content-Type: application/json", b"Content-Length: %d" % len(body))
    return Script(status, headers, body, trickle=trickle, close=close)


def chunked(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Frame ``chunks`` with ``Transfer-Encoding: chunked`` (the script must send that header)."""
    for chunk in chunks:
        if chunk:
            yield b"%x\r\n%s\r\n" % (len(chunk), chunk)
    yield b"0\r\n\r\n"


@dataclass(frozen=True)
class Received:
    """A request as the server read it: its request line and header lines (raw bytes)."""

    line: bytes
    headers: tuple[tuple[bytes, bytes], ...]

    def header(self, name: str) -> bytes | None:
        """The first header called ``name`` (case-insensitive), if any."""
        wanted = name.lower().encode()
        return next((value for key, value in self.headers if key.lower() == wanted), None)


@dataclass
class HostileServer:
    """Serves ``scripts`` on 127.0.0.1 at a free port, in background threads.

    :param scripts: the answers, in order; the last one repeats.
    :param join_timeout: seconds each thread gets to end on exit.
    """

    scripts: list[Script]
    join_timeout: float = 10.0
    received: list[Received] = field(default_factory=list, init=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _threads: list[threading.Thread] = field(default_factory=list, init=False)
    _clients: list[socket.socket] = field(default_factory=list, init=False)
    _served: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if not self.scripts:
            raise ValueError("a HostileServer needs at least one Script")
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def __enter__(self) -> HostileServer:
        self._start(self._accept)
        return self

    def __exit__(self, *exc_info: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._stop.set()
        if self._threads:
            self._threads[0].join(self.join_timeout)  # the acceptor first: then no thread or client is added
        self._listener.close()
        with self._lock:
            threads, clients = list(self._threads), list(self._clients)
        for conn in clients:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in send or recv
        for thread in threads:
            thread.join(self.join_timeout)
        for conn in clients:
            conn.close()
        alive = [thread.name for thread in threads if thread.is_alive()]
        assert not alive, f"the hostile server's threads did not end: {alive}"

    @property
    def connections(self) -> int:
        """How many connections the server has accepted so far (a kept-alive one counts once)."""
        with self._lock:
            return len(self._clients)

    def answer_with(self, *scripts: Script) -> None:
        """Answer the next requests with ``scripts`` instead (the last one repeats): one server, many cases."""
        if not scripts:
            raise ValueError("a HostileServer needs at least one Script")
        with self._lock:
            self.scripts, self._served = list(scripts), 0

    def _start(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name=f"hostile-{len(self._threads)}", daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self._clients.append(conn)
            self._start(self._serve, conn)

    def _next_script(self) -> Script:
        with self._lock:
            script = self.scripts[min(self._served, len(self.scripts) - 1)]
            self._served += 1
        return script

    def _serve(self, conn: socket.socket) -> None:
        pending = b""
        try:
            while not self._stop.is_set():
                head, pending = self._read_head(conn, pending)
                if head is None:
                    return
                script = self._next_script()
                self._answer(conn, script)
                if script.close:
                    return
        except OSError:
            return  # the client went away, or the server is stopping
        finally:
            conn.close()

    def _read_head(self, conn: socket.socket, pending: bytes) -> tuple[Received | None, bytes]:
        while b"\r\n\r\n" not in pending:
            if len(pending) > _HEAD_LIMIT or self._stop.is_set():
                return None, b""
            data = conn.recv(65536)
            if not data:
                return None, b""
            pending += data
        head, _, rest = pending.partition(b"\r\n\r\n")
        line, *lines = head.split(b"\r\n")
        headers = tuple((name.strip(), value.strip()) for name, _, value in (item.partition(b":") for item in lines))
        received = Received(line, headers)
        with self._lock:
            self.received.append(received)
        length = int(received.header("Content-Length") or b"0")
        while len(rest) < length:  # a request body is read and dropped
            data = conn.recv(65536)
            if not data:
                return None, b""
            rest += data
        return received, rest[length:]

    def _answer(self, conn: socket.socket, script: Script) -> None:
        head = b"".join(line + b"\r\n" for line in (script.status, *script.headers)) + b"\r\n"
        if script.trickle > 0:
            for byte in head:
                if self._stop.wait(script.trickle):
                    return
                conn.sendall(bytes([byte]))
        else:
            conn.sendall(head)
        for chunk in script.chunks():
            if self._stop.wait(script.chunk_delay) if script.chunk_delay > 0 else self._stop.is_set():
                return
            conn.sendall(chunk)
