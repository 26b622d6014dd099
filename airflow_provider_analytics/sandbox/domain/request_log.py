"""The log of every ``/v1`` request the sandbox received, for tests to assert on."""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from typing import Any

from airflow_provider_analytics.sandbox.domain.redaction import redact_body, redact_headers, redact_query


@dataclass
class RecordedRequest:
    """One ``/v1`` request as the sandbox received it, and the status it answered (0 when dropped).

    Credentials are redacted as a platform's logs would: ``Authorization`` keeps only its scheme
    (``Bearer [redacted]``), credential headers (``Cookie``, ``X-Api-Key``...) and secret-looking query
    parameters become ``[redacted]``, and so does every secret field (``password``, ``private_key``,
    ``token``...) at any depth of a JSON body, in ``json`` and in ``body`` alike.

    :param method: the HTTP method.
    :param path: the URL path.
    :param query: query parameters (last value wins for repeated names).
    :param headers: request headers with lower-case names.
    :param body: the raw body (re-serialised from the redacted JSON when it held secrets).
    :param json: the parsed JSON body, or None when empty or not JSON.
    :param status: the status sent (0 until answered, and for dropped connections).
    :param request_id: the ``X-Request-Id`` the answer carried.
    :param received_at: when it arrived (sandbox time, RFC 3339).
    """

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    json: Any
    status: int
    request_id: str
    received_at: str = ""


class RequestLog:
    """Requests in arrival order; written on the server thread, read from the tests' thread."""

    def __init__(self) -> None:
        self._entries: list[RecordedRequest] = []
        self._lock = threading.Lock()

    def record(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        headers: dict[str, str],
        body: bytes,
        request_id: str,
        received_at: str = "",
    ) -> RecordedRequest:
        """Append a request, redacted (status 0 until answered); returns the live entry.

        :param method: the HTTP method.
        :param path: the URL path.
        :param query: query parameters.
        :param headers: headers with lower-case names.
        :param body: the raw body.
        :param request_id: the request id of the answer.
        :param received_at: when it arrived (RFC 3339).
        """
        kept, parsed = redact_body(body)
        entry = RecordedRequest(
            method, path, redact_query(query), redact_headers(headers), kept, parsed, 0, request_id, received_at
        )
        with self._lock:
            self._entries.append(entry)
        return entry

    def set_status(self, entry: RecordedRequest, status: int) -> None:
        """Note the status answered to a logged request.

        :param entry: the live entry.
        :param status: the status sent (0 for a dropped connection).
        """
        with self._lock:
            entry.status = status

    def snapshot(self) -> list[RecordedRequest]:
        """Copies of every entry, so that later answers do not change what a test already read."""
        with self._lock:
            return [dataclasses.replace(entry) for entry in self._entries]

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()
