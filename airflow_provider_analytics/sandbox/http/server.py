"""Run the sandbox: uvicorn on a daemon thread, bound to a real socket, started and stopped from Python."""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
import threading
import time
from types import TracebackType

import uvicorn

from airflow_provider_analytics.sandbox.domain.config import SandboxConfig
from airflow_provider_analytics.sandbox.domain.rate_limits import RateLimitStats
from airflow_provider_analytics.sandbox.domain.store import SandboxState
from airflow_provider_analytics.sandbox.domain.tokens import admin_token_problem, new_admin_token
from airflow_provider_analytics.sandbox.faults.hostile import ConnectionDropped
from airflow_provider_analytics.sandbox.http.app import create_app

logger = logging.getLogger(__name__)


class _HideDroppedConnections(logging.Filter):
    """Hide uvicorn's "Exception in ASGI application" traceback for connections dropped on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        while error is not None:
            if isinstance(error, ConnectionDropped):
                return False
            grouped = getattr(error, "exceptions", None)
            if grouped:
                return not any(isinstance(inner, ConnectionDropped) for inner in _flatten(grouped))
            error = error.__cause__ or error.__context__
        return True


def _flatten(errors: tuple[BaseException, ...]) -> list[BaseException]:
    found: list[BaseException] = []
    for error in errors:
        inner = getattr(error, "exceptions", None)
        found.extend(_flatten(inner) if inner else [error])
    return found


def _install_log_filter() -> None:
    error_logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(existing, _HideDroppedConnections) for existing in error_logger.filters):
        error_logger.addFilter(_HideDroppedConnections())


def is_loopback(host: str) -> bool:
    """Whether listening on ``host`` keeps the server to this machine (``127.0.0.1``, ``::1``, ``localhost``).

    A wildcard (``0.0.0.0``, ``::``, ``""``), another address or another name is not loopback.

    :param host: the interface the server listens on.
    """
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_warning(host: str, port: int) -> str:
    """What the sandbox says at start when it listens beyond loopback.

    :param host: the interface it listens on.
    :param port: its port.
    """
    return (
        f"the sandbox listens on {host or '*'} port {port}, beyond loopback: anyone who can reach that port can use "
        "its API tokens (they are fixed and published) and read its /ui pages; the /_sandbox control routes need "
        "the admin token. Listen on 127.0.0.1 (the default) unless other machines must reach it"
    )


class SandboxServer:
    """A sandbox platform server on a real local port.

    The ``/_sandbox`` control routes take ``Authorization: Bearer <admin_token>`` (never an API token); the
    in-process controls (``state``, ``set_rate_limit``) need nothing.

    :param config: the sandbox configuration (demo timings by default).
    :param host: the interface to listen on; anything but loopback logs a warning at start.
    :param port: the port; 0 picks a free one (see ``base_url`` after ``start``).
    :param admin_token: the credential of the control routes (default: a fresh random one for this server).
    :raises ValueError: ``admin_token`` is empty, not printable ASCII without spaces, or one of the API tokens.
    """

    def __init__(
        self,
        config: SandboxConfig | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        admin_token: str | None = None,
    ) -> None:
        self.config = config or SandboxConfig()
        self.host = host
        if admin_token is not None:
            problem = admin_token_problem(admin_token, self.config.tokens)
            if problem is not None:
                raise ValueError(f"admin_token {problem}")
        self.admin_token: str = admin_token if admin_token is not None else new_admin_token()
        """The credential of the ``/_sandbox`` control routes (``Authorization: Bearer <admin_token>``)."""
        self.state = SandboxState(self.config)
        self._requested_port = port
        self._port: int | None = None
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 15.0) -> SandboxServer:
        """Start serving; returns once the server accepts connections.

        :param timeout: seconds to wait for the server to come up.
        """
        if self._thread is not None:
            raise RuntimeError("the sandbox server is already running")
        _install_log_filter()
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((self.host, self._requested_port))
        except OSError:  # e.g. the port is in use: the caller says so; the socket must not leak
            listener.close()
            raise
        self._port = listener.getsockname()[1]
        self._socket = listener
        if not is_loopback(self.host):
            logger.warning(exposure_warning(self.host, self._port))
        config = uvicorn.Config(
            create_app(self.state, self.admin_token),
            log_config=None,
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [listener]}, name="analytics-sandbox", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the sandbox server did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and release the port.

        :param timeout: seconds to wait for open connections to finish.
        """
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        if self._socket is not None:
            self._socket.close()
        self._server, self._thread, self._socket = None, None, None

    def __enter__(self) -> SandboxServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    def set_rate_limit(self, per_second: float | None, headers: bool = True) -> None:
        """Change the per-token limit per second and the ``X-RateLimit-*`` switch while the server runs.

        ``state.reset()`` (the ``analytics_sandbox`` fixture's) restores the configuration's values.

        :param per_second: requests per second per token, over 0 (a fraction allowed); None: no such limit.
        :param headers: whether responses carry ``X-RateLimit-Limit/Remaining/Reset`` (429s keep ``Retry-After``).
        :raises ValueError: ``per_second`` is not a finite number over 0 or None.
        """
        self.state.set_rate_limit(per_second, headers)

    def rate_limit_stats(self) -> RateLimitStats:
        """``{"per_second", "headers", "allowed", "refused"}``: the per-second limit, and the requests it let
        through and refused since the server started or was last reset (counted while a limit is set)."""
        return self.state.rate_limit_stats()

    @property
    def requests_in_progress(self) -> int:
        """How many requests the server is handling at this moment (``0`` when idle or stopped)."""
        server = self._server
        return 0 if server is None else len(server.server_state.tasks)

    @property
    def port(self) -> int:
        """The port the server listens on (known once started)."""
        if self._port is None:
            raise RuntimeError("the sandbox server has not been started")
        return self._port

    @property
    def base_url(self) -> str:
        """``http://host:port`` of the running server (a wildcard host is reported as loopback)."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(self.host, self.host)
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    @property
    def token(self) -> str:
        """The full-access bearer token."""
        return self.config.primary_token

    def connection_json(self, token: str | None = None) -> str:
        """The Airflow connection for this server in JSON form (``AIRFLOW_CONN_...`` value).

        :param token: the token to use (default: the full-access token).
        """
        return json.dumps(
            {
                "conn_type": "analytics",
                "host": self.base_url,
                "password": token or self.token,
                "extra": {"ui_url": f"{self.base_url}/ui"},
            }
        )
