"""What a client is configured with: :class:`ClientConfig`, checked when it is made, and its base URL rules.

The hooks read a config from an Airflow connection (``connection/_config.py``); tests and benchmarks make one
directly. Everything here is plain data and validation: no I/O, no Airflow.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from airflow_provider_analytics.wire._ids import validate_id
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from airflow_provider_analytics.wire.retry import RetryPolicy

__all__ = ["ClientConfig", "RateLimitStore"]

# Seconds one attempt may take in all (the connection's ``timeout`` extra), and the most it may be set to.
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 3600.0
# JSON answers are small (a page is at most 100 items); the cap keeps a hostile or broken answer from
# taking the process's memory. Parsed, a body can need ~25 times its size (`[{},{},...]`): 3 MiB
# keeps the worst answer under ~80 MB.
DEFAULT_MAX_RESPONSE_BYTES = 3 * 1024 * 1024
# Reports are files of a few MB to a few GB; a download that claims more is refused, not written.
DEFAULT_MAX_DOWNLOAD_BYTES = 10 * 1024**3
# The slowest a download may run, in bytes per second averaged over DOWNLOAD_RATE_WINDOW (the connection extra
# ``min_download_rate``; 0 turns the floor off). 32 KiB/s is far below any working link, so only a stalled or
# trickling server is stopped; averaged over a minute, short stalls do not count.
DEFAULT_MIN_DOWNLOAD_RATE = 32 * 1024
DOWNLOAD_RATE_WINDOW = 60.0


@dataclass(frozen=True)
class RateLimitStore:
    """The Redis server through which every process on one token shares its rate limiter (``_shared_limiter.py``).

    Read from the Airflow connection of type ``redis`` that the analytics connection's extra
    ``rate_limit_redis_conn_id`` names, with the fields Airflow's Redis provider reads (``RedisHook``): host, port,
    login, password, and the extras ``db``, ``ssl``, ``ssl_cert_reqs``, ``ssl_ca_certs``, ``ssl_certfile``,
    ``ssl_keyfile``, ``ssl_check_hostname``.

    :param host: the server's host name or address.
    :param port: its port.
    :param db: the database number.
    :param username: the ACL user (the connection's login), if any.
    :param password: the password, if any (kept out of ``repr``).
    :param ssl: whether to connect with TLS.
    :param ssl_cert_reqs: ``required``, ``optional`` or ``none``: how the server's certificate is checked.
    :param ssl_ca_certs: a CA bundle to check it with.
    :param ssl_certfile: a client certificate.
    :param ssl_keyfile: its private key.
    :param ssl_check_hostname: whether the certificate must name the host (``None``: redis-py's default).
    :param connection_id: the id of the Airflow connection it was read from, for messages.
    """

    host: str
    port: int = 6379
    db: int = 0
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ssl: bool = False
    ssl_cert_reqs: str = "required"
    ssl_ca_certs: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_check_hostname: bool | None = None
    connection_id: str | None = None

    def __post_init__(self) -> None:
        where = f"the rate limit's Redis connection {self.connection_id!r}" if self.connection_id else "the store"
        if not isinstance(self.host, str) or not self.host.strip() or any(c.isspace() for c in self.host.strip()):
            raise AnalyticsInputError(f"{where} has no usable host: set it to the Redis server's host name")
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 1 <= self.port <= 65535:
            raise AnalyticsInputError(f"{where}: port must be a whole number from 1 to 65535, got {self.port!r}")
        if isinstance(self.db, bool) or not isinstance(self.db, int) or not 0 <= self.db <= 100_000:
            raise AnalyticsInputError(f"{where}: extra 'db' must be a database number from 0, got {self.db!r}")
        if self.ssl_cert_reqs not in ("required", "optional", "none"):
            raise AnalyticsInputError(
                f"{where}: extra 'ssl_cert_reqs' must be required, optional or none, got {self.ssl_cert_reqs!r}"
            )

    @property
    def address(self) -> str:
        """``redis://host:port/db`` (``rediss://`` with TLS), for messages: never the password."""
        return f"{'rediss' if self.ssl else 'redis'}://{self.host}:{self.port}/{self.db}"


@dataclass(frozen=True)
class ClientConfig:
    """Everything a client needs; the token is kept out of ``repr``.

    :param base_url: scheme, host, optional port and optional path prefix, without ``/v1``.
    :param token: the API token sent as ``Authorization: Bearer``.
    :param workspace_id: the workspace to act in (``X-Workspace-Id``); ``None`` uses the token's default.
    :param timeout: seconds one HTTP request may take in all (connecting, sending, reading the answer).
    :param verify: ``True``, ``False`` or the path of a CA bundle.
    :param retry: the retry policy.
    :param allow_insecure_http: allow plain ``http://`` to a host that is not loopback.
    :param max_response_bytes: the largest JSON answer (after decompression) the client reads.
    :param max_download_bytes: the largest report file the client downloads.
    :param min_download_rate: the slowest a download may run, in bytes per second averaged over
        ``download_rate_window``; a slower one fails with ``AnalyticsTimeoutError``. 0 turns the floor off.
    :param download_rate_window: seconds the download rate is averaged over (not a connection extra).
    :param connection_id: the id of the connection this config was read from (plain text, so the wire layer
        needs no Airflow); errors a connection setting causes name it next to what to change.
    :param rate_limit_store: the Redis server through which every process on this token shares its rate limiter
        (``None``: each process paces on its own).
    """

    base_url: str
    token: str = field(repr=False)
    workspace_id: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    verify: bool | str = True
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    allow_insecure_http: bool = False
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_download_bytes: int = DEFAULT_MAX_DOWNLOAD_BYTES
    min_download_rate: int = DEFAULT_MIN_DOWNLOAD_RATE
    download_rate_window: float = DOWNLOAD_RATE_WINDOW
    connection_id: str | None = None
    rate_limit_store: RateLimitStore | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", _check_base_url(self.base_url, self.allow_insecure_http))
        if not isinstance(self.token, str) or not self.token.strip():
            raise AnalyticsInputError("the API token is empty: set it as the connection's password")
        if self.workspace_id is not None:
            validate_id(self.workspace_id, "workspace_id")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)):
            raise AnalyticsInputError(f"timeout must be a number of seconds, got {self.timeout!r}")
        if not 0 < self.timeout <= MAX_TIMEOUT:
            raise AnalyticsInputError(f"timeout must be over 0 and at most {MAX_TIMEOUT:g} s, got {self.timeout!r}")
        for name in ("max_response_bytes", "max_download_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1024:
                raise AnalyticsInputError(f"{name} must be a whole number of bytes, at least 1024, got {value!r}")
        rate = self.min_download_rate
        if isinstance(rate, bool) or not isinstance(rate, int) or rate < 0:
            raise AnalyticsInputError(f"min_download_rate must be a whole number of bytes per second, got {rate!r}")
        window = self.download_rate_window
        if isinstance(window, bool) or not isinstance(window, (int, float)) or not 0 < window < float("inf"):
            raise AnalyticsInputError(f"download_rate_window must be a number of seconds over 0, got {window!r}")


def without_userinfo(url: str) -> str:
    """``url`` with any ``user:password@`` removed, for messages: credentials never reach a log line."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        scheme, rest = "", url
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "***@" + authority.rsplit("@", 1)[1]
    return f"{scheme}{separator}{authority}{slash}{path}"


def _check_base_url(url: str, allow_insecure_http: bool) -> str:
    if not isinstance(url, str) or any(ch.isspace() or not ch.isprintable() for ch in url.strip()):
        raise AnalyticsInputError(
            f"the base URL must not contain spaces or control characters, got {without_userinfo(str(url))!r}"
        )
    try:
        parts = urlsplit(url.strip())
        hostname, _ = parts.hostname, parts.port
    except ValueError:
        hostname = None
    if hostname is None or parts.scheme not in ("http", "https"):
        raise AnalyticsInputError(
            "the base URL must look like https://api.example.com (scheme http or https, a host, an optional "
            f"port from 1 to 65535), got {without_userinfo(url)!r}"
        )
    if parts.query or parts.fragment or parts.username or parts.password:
        raise AnalyticsInputError("the base URL must not carry a query, a fragment or credentials")
    if parts.scheme == "http" and not allow_insecure_http and not is_loopback(hostname):
        raise AnalyticsInputError(
            f"refusing plain http:// to {hostname}: the token would travel unencrypted. Use https://, "
            'or set the connection extra "allow_insecure_http": true for a trusted private network '
            "(plain http:// needs no extra only to localhost, 127.0.0.0/8 or ::1)"
        )
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    base = f"{parts.scheme}://{parts.netloc}{path}"
    try:
        httpx.URL(base)
    except httpx.InvalidURL as exc:
        raise AnalyticsInputError(f"the base URL {base!r} is not a valid URL: {exc}") from None
    return base


def is_loopback(hostname: str) -> bool:
    """Whether ``hostname`` is a literal loopback address (127.0.0.0/8, ``::1``) or exactly ``localhost``.

    Other names that usually mean this machine (``localhost.localdomain``, ``ip6-localhost``) come from the
    resolver's configuration, which may send them anywhere, so they do not count.

    :param hostname: the URL's host name (IPv6 with or without brackets).
    """
    if hostname.lower() == "localhost":  # RFC 6761: resolves to loopback, by rule rather than by configuration
        return True
    try:
        return ipaddress.ip_address(hostname.strip("[]")).is_loopback
    except ValueError:
        return False
