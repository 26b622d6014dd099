"""The platform's notice that an endpoint is going away (``Deprecation``, ``Sunset``), logged once per route.

Every answer of a deprecated route carries the headers; a triggerer polling it thousands of times an hour must
say so once (per process, header and route), at WARNING, where the DAG's owner looks.
"""

from __future__ import annotations

import logging
import threading

import httpx

from airflow_provider_analytics.wire._contract import LIFECYCLE_HEADERS
from airflow_provider_analytics.wire._endpoints import RequestSpec
from airflow_provider_analytics.wire.errors import clean_text

log = logging.getLogger("airflow_provider_analytics.wire")


class LifecycleNotices:
    """Logs each ``Deprecation``/``Sunset`` header once per process for each (header, route)."""

    def __init__(self) -> None:
        self._seen: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def note(self, spec: RequestSpec, response: httpx.Response) -> None:
        """Log the lifecycle headers of ``response`` that this process has not logged for its route yet.

        :param spec: the request that was answered.
        :param response: its answer.
        """
        for header in LIFECYCLE_HEADERS:
            value = response.headers.get(header)
            if value is None:
                continue
            with self._lock:
                if (header, spec.route) in self._seen:
                    continue
                self._seen.add((header, spec.route))
            log.warning(
                "The Analytics Platform sent %s: %s for %s %s; plan to move off this endpoint",
                header,
                clean_text(value, 200),
                spec.method,
                spec.route,
            )


LIFECYCLE_NOTICES = LifecycleNotices()
