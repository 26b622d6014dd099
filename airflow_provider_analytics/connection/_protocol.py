"""The parts of an Airflow ``Connection`` that the connection's modules read, as a protocol.

Its own module, below both ``_config.py`` (which reads the fields) and ``_notes.py`` (which names the connection
and says what is ignored), so that neither needs the other for the type.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["ConnectionLike"]


class ConnectionLike(Protocol):
    """The parts of an Airflow ``Connection`` read here (read-only, so a ``Connection`` whose ``conn_id`` is a
    plain ``str`` matches too)."""

    @property
    def conn_id(self) -> str | None: ...
    @property
    def conn_type(self) -> str | None: ...
    @property
    def login(self) -> str | None: ...
    @property
    def host(self) -> str | None: ...
    @property
    def port(self) -> int | None: ...
    @property
    def schema(self) -> str | None: ...
    @property
    def password(self) -> str | None: ...
    @property
    def extra_dejson(self) -> dict[str, Any]: ...
