"""What the operating system says about this process's TCP connections: a pool that is closed holds none."""

from __future__ import annotations

import psutil


def connections_to(port: int) -> int:
    """How many TCP connections this process holds open to ``port`` on loopback (a server's, say the sandbox's).

    Read from the operating system (psutil, which Airflow depends on), so it counts what is really open, not
    what a client object believes: a closed connection pool holds no socket, a kept-alive one holds one.

    :param port: the server's port.
    """
    return sum(
        1
        for connection in psutil.Process().net_connections(kind="tcp")
        if connection.raddr and connection.raddr.port == port and connection.status == psutil.CONN_ESTABLISHED
    )
