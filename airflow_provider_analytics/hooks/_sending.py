"""What :class:`~airflow_provider_analytics.hooks.analytics.AnalyticsHook`'s methods send with.

The request builders, the client, the connection's reading and the error a re-read answers: reached as
``hooks._sending.<name>``, which this package imports on a hook's first use (``hooks/__init__.py``, PEP 562), in
the process that sends. A DAG file that names the hook for its ``@task`` code imports ``hooks/analytics.py`` at
every parse and never this module, so the wire layer (httpx, the limiter, the transports) stays out of the parse.
Importing it installs (once) the observer that turns the wire layer's events into Airflow metrics
(``hooks/_metrics.py``). What a few methods alone need and is heavy (the definitions, the download's destinations,
the connection form and probe) stays imported inside those methods.
"""

from __future__ import annotations

from airflow_provider_analytics.connection._config import masked_config, store_connection, ui_url_of
from airflow_provider_analytics.connection._masking import register_secrets
from airflow_provider_analytics.hooks._metrics import report_to_airflow
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._conditional import send_update
from airflow_provider_analytics.wire._pagination import ChartRows
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.errors import UnauthenticatedError

report_to_airflow()  # every process that sends reports its requests as Airflow metrics (hooks/_metrics.py)

__all__ = [
    "AnalyticsClient",
    "ChartRows",
    "UnauthenticatedError",
    "endpoints",
    "masked_config",
    "register_secrets",
    "send_update",
    "store_connection",
    "ui_url_of",
]
