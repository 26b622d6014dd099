"""What the wire layer tells an observer about its requests: the seam that metrics hang on, without Airflow.

Every request leaves the provider through one retry loop (``_core.py``), every throttled one through one rate
limiter per account (``_throttle.py``), every report's bytes through one stream (``_download.py``). They report
what happened to the process's :class:`WireObserver`, which does nothing until a layer that knows where metrics go
installs another (the hooks install one that forwards to Airflow's ``Stats``: ``hooks/_metrics.py``). The wire
layer itself imports no Airflow and sends nothing, so a client used without Airflow costs one no-op call per event.

What is reported is bounded in cardinality: a route is its template (``/v1/reports/{report_id}``), never a path
with an id; an account is its Airflow connection id, never its token. Each call, once it ended, is also reported
whole (:class:`CallRecord`: its start, attempts, last status and request id, the error it ended with): what a
trace's span of it holds (``hooks/_traces.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["CallRecord", "PauseSource", "WireObserver", "install_observer", "observer", "status_class"]

# The status class of an attempt that got no answer (a lost connection, a timeout, a failed TLS handshake).
NO_ANSWER = "no_answer"
# Why a request was sent again (the `cause` of a retry): a bounded set, never an error's text.
RETRY_CAUSES = ("rate_limited", "server_error", "timeout", "connection")
# Who a limiter paces: this process alone, or every process on the token through a shared store.
LIMITER_SCOPES = ("process", "store")


class PauseSource(Enum):
    """What started a pause of an account's requests: its value is the metrics' ``source`` tag, its
    :attr:`header` what the log line and errors name."""

    RETRY_AFTER = "retry_after"
    BACKOFF = "backoff"
    RATE_LIMIT_RESET = "rate_limit_reset"

    @property
    def header(self) -> str:
        """The answer's part that asked for the pause, as a user reads it in a log line."""
        return _PAUSE_HEADERS[self]


_PAUSE_HEADERS = {
    PauseSource.RETRY_AFTER: "Retry-After",
    PauseSource.BACKOFF: "429 without a Retry-After (a backoff)",
    PauseSource.RATE_LIMIT_RESET: "X-RateLimit-Reset",
}


def status_class(status: int | None) -> str:
    """``2xx``, ``4xx``, ``5xx`` (and so on) for an answer's status; :data:`NO_ANSWER` for none.

    :param status: the HTTP status, or ``None`` when no answer came.
    """
    return NO_ANSWER if status is None else f"{status // 100}xx"


@dataclass
class CallRecord:
    """One call of the API over all its attempts, filled in by the retry loop as they go.

    :param account: the connection id.
    :param method: the HTTP method.
    :param route: the route's template.
    :param started_ns: epoch nanoseconds when the call began (before it waited for its turn).
    :param attempts: the attempts sent (a retry, or a 429's resend, is one more).
    :param status: the last attempt's HTTP status; ``None`` when it got no answer (or none was sent).
    :param request_id: the platform's request id of the last attempt's answer (``X-Request-Id``, checked), if any.
    :param error: the class name of the exception the call failed with; ``None`` when it was answered.
    """

    account: str
    method: str
    route: str
    started_ns: int
    attempts: int = 0
    status: int | None = None
    request_id: str | None = None
    error: str | None = None


class WireObserver:
    """Told of each event of the wire layer; this base ignores them all (the default: nothing is measured).

    Every method is called on the thread or event loop that sends, so an implementation must not block. ``account``
    is the connection id of the client (``"none"`` for a client built without one).
    """

    def answered(self, account: str, method: str, route: str, status: str, seconds: float) -> None:
        """One attempt of a request ended: with an answer of status class ``status``, or with none.

        :param account: the connection id.
        :param method: the HTTP method.
        :param route: the route's template.
        :param status: from :func:`status_class`.
        :param seconds: from sending to the answer (its body read, unless it is a download's stream).
        """

    def retried(self, account: str, method: str, route: str, cause: str) -> None:
        """A request is sent again.

        :param account: the connection id.
        :param method: the HTTP method.
        :param route: the route's template.
        :param cause: one of :data:`RETRY_CAUSES`.
        """

    def rate_limited(self, account: str, method: str, route: str) -> None:
        """The platform refused a request with 429.

        :param account: the connection id.
        :param method: the HTTP method.
        :param route: the route's template.
        """

    def queued(self, account: str, seconds: float) -> None:
        """A request of a throttled account waited this long for its turn before it was sent.

        :param account: the connection id.
        :param seconds: the time from asking for a turn to sending.
        """

    def limiter(self, account: str, pace: float, queue_depth: int, scope: str = "process", share: float = 1.0) -> None:
        """The account's limiter paces at ``pace`` requests per second with ``queue_depth`` requests waiting.

        :param account: the connection id that first used the limiter.
        :param pace: requests per second (0 when the account is no longer throttled).
        :param queue_depth: requests waiting for their turn.
        :param scope: one of :data:`LIMITER_SCOPES`: ``process`` (this process paces alone; ``pace`` is its own) or
            ``store`` (every process on the token shares the limiter through a store; ``pace`` is the fleet's).
        :param share: this process's part of the token's limit: learnt from the platform's headers when it paces
            alone, its part of the fleet's sends when it paces through the store (0 to 1).
        """

    def paused(self, account: str, source: PauseSource) -> None:
        """A pause of all the account's requests began (or grew longer).

        :param account: the connection id that first used the limiter.
        :param source: what asked for it.
        """

    def called(self, call: CallRecord) -> None:
        """A call ended: answered with success, or failed for good (after its last retry). A call abandoned
        part-way (its task cancelled or killed) is not reported.

        :param call: the call, whole.
        """

    def downloaded(self, account: str, size: int) -> None:
        """A report's download read ``size`` bytes (those of attempts that were resumed or restarted count too).

        :param account: the connection id.
        :param size: bytes read from the platform.
        """


_observer = WireObserver()


def observer() -> WireObserver:
    """The process's observer (the no-op base until one is installed)."""
    return _observer


def install_observer(new: WireObserver) -> WireObserver:
    """Make ``new`` the process's observer; returns the one it replaces (a test puts that back).

    :param new: the observer every later event goes to.
    """
    global _observer
    previous, _observer = _observer, new
    return previous
