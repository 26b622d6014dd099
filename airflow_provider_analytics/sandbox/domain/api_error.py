"""The error a request is refused with: a contract status, a message and machine-readable details.

Raised by the domain (a bad cursor, an unknown id, a bad report parameter) and by the routes alike; the
HTTP edge turns it into the contract's error body (``http/errors.py``).
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An error answer with the contract body; raised by the domain or a route.

    :param status: the HTTP status.
    :param message: a human-readable message.
    :param details: machine-readable details.
    :param headers: extra response headers (e.g. ``Retry-After``).
    """

    def __init__(
        self,
        status: int,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.details = details or {}
        self.headers = headers or {}

    @classmethod
    def not_found(cls, kind: str, resource_id: str) -> ApiError:
        """404 for an unknown id, naming it.

        :param kind: resource kind, e.g. ``workflow``.
        :param resource_id: the id that was not found.
        """
        return cls(404, f"{kind} {resource_id} not found")

    @classmethod
    def invalid_fields(cls, fields: dict[str, str], status: int = 422) -> ApiError:
        """400/422 naming each bad field.

        :param fields: field path -> what is wrong with it.
        :param status: 422 for body problems (default), 400 for query problems.
        """
        listing = "; ".join(f"{name} {problem}" for name, problem in fields.items())
        return cls(status, f"invalid request: {listing}", {"fields": fields})
