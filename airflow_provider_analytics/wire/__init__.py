"""The wire layer: HTTP and the /v1 contract, with no Airflow imports.

Endpoints are pure request builders (:mod:`.endpoints`); :class:`AnalyticsClient` and
:class:`AsyncAnalyticsClient` send them with the shared retry policy and error mapping.
"""

from airflow_provider_analytics.wire.client import AnalyticsClient, AsyncAnalyticsClient
from airflow_provider_analytics.wire.config import ClientConfig
from airflow_provider_analytics.wire.retry import RetryPolicy

__all__ = ["AnalyticsClient", "AsyncAnalyticsClient", "ClientConfig", "RetryPolicy"]
