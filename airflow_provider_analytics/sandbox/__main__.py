"""``python -m airflow_provider_analytics.sandbox``: run a sandbox until interrupted.

Prints the Airflow connection for it (as JSON, and as an ``export`` line for a shell) on start.
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from airflow_provider_analytics.sandbox.config import SandboxConfig, Timings
from airflow_provider_analytics.sandbox.server import SandboxServer


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m airflow_provider_analytics.sandbox",
        description="Run a local Analytics Platform /v1 sandbox server.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port to listen on; 0 picks a free one")
    parser.add_argument(
        "--speed",
        choices=("fast", "demo"),
        default="demo",
        help="state-machine timings: 'demo' (seconds, default) or 'fast' (fractions of a second)",
    )
    parser.add_argument(
        "--auto-sync",
        type=float,
        default=None,
        metavar="SECONDS",
        help="start a sync of every data source this often (0 turns it off; 'demo' speed defaults to 15)",
    )
    parser.add_argument("--no-seed", action="store_true", help="start with empty workspaces")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the sandbox until SIGINT or SIGTERM.

    :param argv: command-line arguments (default: ``sys.argv[1:]``).
    """
    options = _parser().parse_args(argv)
    timings = Timings.fast() if options.speed == "fast" else Timings.demo()
    if options.auto_sync is not None:
        timings = dataclasses.replace(timings, auto_sync_interval=options.auto_sync or None)
    server = SandboxServer(SandboxConfig(timings=timings, seed=not options.no_seed), options.host, options.port)
    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    server.start()
    connection = server.connection_json()
    print(connection)
    print(f"export AIRFLOW_CONN_ANALYTICS_DEFAULT='{connection}'")
    print(f"# sandbox at {server.base_url} (UI: {server.base_url}/ui); Ctrl+C stops it", file=sys.stderr)
    sys.stdout.flush()
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
