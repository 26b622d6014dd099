"""What both hooks share: the connection type and id, and reading a connection into a client config."""

from __future__ import annotations

from typing import Any

from airflow.providers.common.compat.sdk import BaseHook

from airflow_provider_analytics.hooks.connection import client_config_from_connection
from airflow_provider_analytics.wire.core import ClientConfig
from airflow_provider_analytics.wire.tls import tls_context

DEFAULT_CONN_ID = "analytics_default"


def masked_config(conn: Any) -> ClientConfig:
    """The client config of an Airflow connection, its token registered with Airflow's secrets masker."""
    config = client_config_from_connection(conn)
    # Airflow masks connection passwords itself; registering again covers tokens from URI or env forms.
    from airflow.providers.common.compat.sdk import mask_secret

    mask_secret(config.token)
    return config


def prepared_config(conn: Any) -> ClientConfig:
    """The masked config with its TLS context built: everything blocking a client needs, done at once."""
    config = masked_config(conn)
    tls_context(config.verify)
    return config


class AnalyticsConnection(BaseHook):
    """What both hooks share: the connection type, its default id and the ``analytics_conn_id`` name."""

    conn_name_attr = "analytics_conn_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = "analytics"
    hook_name = "Analytics Platform"

    def __init__(self, analytics_conn_id: str = DEFAULT_CONN_ID, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.analytics_conn_id = analytics_conn_id
