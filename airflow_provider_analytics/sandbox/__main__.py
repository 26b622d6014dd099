"""``python -m airflow_provider_analytics.sandbox``: run a sandbox until interrupted.

Prints the Airflow connection for it (as JSON, and as an ``export`` line for a shell) and its admin token (an
``export ANALYTICS_SANDBOX_ADMIN_TOKEN=...`` line) on start; listening beyond loopback, a warning too.
Without the ``sandbox`` extra it prints what to install and exits with status 2, so the server's
modules are imported only once the extra is known to be there.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import logging
import os
import shlex
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING

from airflow_provider_analytics.sandbox import SandboxDependencyError, require_dependencies
from airflow_provider_analytics.sandbox.domain.config import MAX_GENERATED_ROWS
from airflow_provider_analytics.sandbox.domain.rate_limits import per_second_problem
from airflow_provider_analytics.sandbox.domain.tokens import ADMIN_TOKEN_ENV_VAR, token_problem

if TYPE_CHECKING:
    from airflow_provider_analytics.sandbox.domain.config import SandboxConfig, Timings
    from airflow_provider_analytics.sandbox.faults.chaos import ChaosConfig

DEFAULT_PORT = 8765


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m airflow_provider_analytics.sandbox",
        description="Run a local Analytics Platform /v1 sandbox server.",
        epilog=(
            "Report sizes: a report is rendered from its dashboards' charts and is small (kilobytes). For load "
            "tests, a csv report takes the parameter rows (0 to "
            f"{MAX_GENERATED_ROWS:,}, about 45 bytes a row: at most about 227 MB) and is filled with that many "
            "synthetic rows; larger files need several reports."
        ),
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="interface to listen on (default 127.0.0.1); any other warns that whoever reaches the port can use "
        "the API tokens",
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        help=f"port to listen on (default {DEFAULT_PORT}, away from Airflow's 8080); 0 picks a free one",
    )
    parser.add_argument(
        "--speed",
        choices=("fast", "demo"),
        default="demo",
        help="state-machine timings: 'demo' (seconds, default) or 'fast' (fractions of a second)",
    )
    parser.add_argument(
        "--auto-sync",
        type=_not_negative,
        default=None,
        metavar="SECONDS",
        help="start a sync of every data source this often (0 turns it off; 'demo' speed defaults to 15)",
    )
    for article, kind, what in (
        ("an", "execution", "queued + running"),
        ("a", "report", "pending + generating"),
        ("a", "sync", "pending + syncing"),
    ):
        parser.add_argument(
            f"--{kind}-seconds",
            type=_positive,
            default=None,
            metavar="S",
            help=f"how long {article} {kind} takes ({what}), to rehearse restarts and kills during long waits",
        )
    parser.add_argument("--no-seed", action="store_true", help="start with empty workspaces")
    parser.add_argument(
        "--admin-token",
        type=_admin_token,
        default=None,
        metavar="TOKEN",
        help=(
            "the credential the /_sandbox control routes require (Authorization: Bearer TOKEN), never an API token; "
            f"default: ${ADMIN_TOKEN_ENV_VAR} if set, else a random one. Printed at start either way"
        ),
    )
    parser.add_argument(
        "--work-seconds",
        type=_range,
        default=None,
        metavar="MIN-MAX",
        help="each execution and report takes a random time in this range (e.g. 60-600), seeded by --chaos-seed",
    )
    parser.add_argument(
        "--rate-limit",
        type=_per_second,
        default=None,
        metavar="N",
        help=(
            "allow each token N requests per second (counted per whole second of the wall clock; a fraction is "
            "kept: 0.5 allows 1 request every 2 s); more are answered 429 with Retry-After (default: no "
            "per-second limit)"
        ),
    )
    parser.add_argument(
        "--no-rate-limit-headers",
        action="store_true",
        help="send no X-RateLimit-Limit/-Remaining/-Reset headers, like a platform that publishes none (a 429 "
        "still carries Retry-After)",
    )
    chaos = parser.add_argument_group(
        "chaos", "seeded random faults, off unless --chaos-seed is given; the same seed gives the same sequence"
    )
    chaos.add_argument("--chaos-seed", type=int, default=None, metavar="N", help="turn chaos on, seeded with N")
    for name, what in _CHAOS_RATES:
        chaos.add_argument(f"--chaos-{name.replace('_', '-')}", type=_rate, default=0.0, metavar="P", help=what)
    chaos.add_argument(
        "--chaos-retry-after", type=int, default=1, metavar="S", help="Retry-After of a random 429 (default 1)"
    )
    chaos.add_argument(
        "--chaos-slow-seconds",
        type=_not_negative,
        default=35.0,
        metavar="S",
        help="how late a slow answer comes; set it over the client's timeout (default 35)",
    )
    return parser


_CHAOS_RATES = (
    ("rate_limited", "share of requests answered 429 with Retry-After"),
    ("server_error", "share answered 500, 502 or 503 before processing"),
    ("reset", "share whose connection is reset mid-answer (downloads cut short; others processed, then dropped)"),
    ("slow", "share answered only after --chaos-slow-seconds"),
    ("execution_failure", "share of new executions that fail"),
    ("report_failure", "share of new reports that fail"),
)


def _rate(text: str) -> float:
    value = _seconds(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a probability from 0 to 1, got {text!r}")
    return value


def _range(text: str) -> tuple[float, float]:
    low, _, high = text.partition("-")
    bounds = (_seconds(low), _seconds(high or low))
    if not 0 < bounds[0] <= bounds[1] < 86400:
        raise argparse.ArgumentTypeError(f"must be MIN-MAX seconds with 0 < MIN <= MAX, got {text!r}")
    return bounds


def _chaos(options: argparse.Namespace) -> ChaosConfig:
    from airflow_provider_analytics.sandbox.faults.chaos import ChaosConfig

    rates = {name: getattr(options, f"chaos_{name}") for name, _ in _CHAOS_RATES}
    try:
        return ChaosConfig(
            seed=options.chaos_seed,
            retry_after=options.chaos_retry_after,
            slow_seconds=options.chaos_slow_seconds,
            work_seconds=options.work_seconds,
            **rates,
        )
    except ValueError as error:
        raise SystemExit(f"invalid chaos settings: {error}") from None


def _per_second(text: str) -> float:
    value = _seconds(text)
    if per_second_problem(value) is not None:
        raise argparse.ArgumentTypeError(f"must be a number of requests per second over 0, got {text!r}")
    return value


def _config(options: argparse.Namespace) -> SandboxConfig:
    """The server's configuration from the command line."""
    from airflow_provider_analytics.sandbox.domain.config import SandboxConfig

    return SandboxConfig(
        timings=_timings(options),
        seed=not options.no_seed,
        chaos=_chaos(options),
        rate_limit_per_second=options.rate_limit,
        rate_limit_headers=not options.no_rate_limit_headers,
    )


def _seconds(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")


def _positive(text: str) -> float:
    value = _seconds(text)
    if not 0 < value < 86400:
        raise argparse.ArgumentTypeError(f"must be a number of seconds over 0 and under a day, got {text!r}")
    return value


def _not_negative(text: str) -> float:
    value = _seconds(text)
    if not 0 <= value < 86400:
        raise argparse.ArgumentTypeError(f"must be a number of seconds from 0 to under a day, got {text!r}")
    return value


def _admin_token(text: str) -> str:
    problem = token_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{problem}")
    return text


def _chosen_admin_token(options: argparse.Namespace, parser: argparse.ArgumentParser) -> str | None:
    """``--admin-token``, else a non-empty ``ANALYTICS_SANDBOX_ADMIN_TOKEN``, else None (a random one)."""
    if options.admin_token is not None:
        return str(options.admin_token)
    from_env = os.environ.get(ADMIN_TOKEN_ENV_VAR, "")
    if not from_env:
        return None
    problem = token_problem(from_env)
    if problem is not None:
        parser.error(f"{ADMIN_TOKEN_ENV_VAR} {problem}")
    return from_env


class _WarningLines(logging.StreamHandler):  # type: ignore[type-arg]
    """The sandbox's warnings (listening beyond loopback) and errors, as ``# WARNING: ...`` lines on stderr."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.setFormatter(logging.Formatter("# %(levelname)s: %(message)s"))
        self.setLevel(logging.WARNING)


def _show_warnings_on_stderr() -> None:
    sandbox_logger = logging.getLogger("airflow_provider_analytics.sandbox")
    for earlier in [handler for handler in sandbox_logger.handlers if isinstance(handler, _WarningLines)]:
        sandbox_logger.removeHandler(earlier)  # main() run again in one process: one line per warning
    sandbox_logger.addHandler(_WarningLines())


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 0 to 65535, got {text!r}")
    return value


def _timings(options: argparse.Namespace) -> Timings:
    """The speed's timings, with any durations given on the command line (a fifth in the first state)."""
    from airflow_provider_analytics.sandbox.domain.config import Timings

    timings = Timings.fast() if options.speed == "fast" else Timings.demo()
    if options.auto_sync is not None:
        timings = dataclasses.replace(timings, auto_sync_interval=options.auto_sync or None)
    for kind, first, second in (
        ("execution", "execution_queued", "execution_running"),
        ("report", "report_pending", "report_generating"),
        ("sync", "sync_pending", "sync_running"),
    ):
        total = getattr(options, f"{kind}_seconds")
        if total is not None:
            timings = dataclasses.replace(timings, **{first: total / 5, second: total * 4 / 5})
    return timings


def main(argv: Sequence[str] | None = None) -> int:
    """Run the sandbox until SIGINT or SIGTERM.

    :param argv: command-line arguments (default: ``sys.argv[1:]``).
    """
    parser = _parser()
    options = parser.parse_args(argv)
    admin_token = _chosen_admin_token(options, parser)
    try:
        require_dependencies()
    except SandboxDependencyError as error:
        print(error, file=sys.stderr)
        return 2
    from airflow_provider_analytics.sandbox.http.server import SandboxServer

    config = _config(options)
    try:
        server = SandboxServer(config, options.host, options.port, admin_token=admin_token)
    except ValueError as error:  # an admin token that is also an API token
        parser.error(f"--admin-token/{ADMIN_TOKEN_ENV_VAR}: {error}")
    _show_warnings_on_stderr()
    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    try:
        server.start()
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            problem = (
                f"port {options.port} is in use (is another sandbox or Airflow's api-server running?): "
                "pick another with --port"
            )
        else:
            problem = f"cannot listen on {options.host} port {options.port}: {error.strerror or error}"
        print(problem, file=sys.stderr)
        return 2
    connection = server.connection_json()
    print(connection)
    print(f"export AIRFLOW_CONN_ANALYTICS_DEFAULT='{connection}'")
    print(f"export {ADMIN_TOKEN_ENV_VAR}={shlex.quote(server.admin_token)}")
    print(
        f"# sandbox at {server.base_url} (UI: {server.base_url}/ui), API token {server.token}, admin token for "
        f"{server.base_url}/_sandbox: {server.admin_token} (Authorization: Bearer <admin token>); Ctrl+C stops it",
        file=sys.stderr,
    )
    sys.stdout.flush()
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
