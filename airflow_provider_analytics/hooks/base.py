"""What both hooks share: the connection type, its default id and the ``analytics_conn_id`` name.

Reading the connection into a client config is in ``connection/_config.py``, imported by the hooks' methods:
this module is imported by every DAG file that uses an operator.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.common.compat.sdk import BaseHook

from airflow_provider_analytics.hooks import DEFAULT_CONN_ID

__all__ = ["DEFAULT_CONN_ID", "AnalyticsBaseHook"]


class AnalyticsBaseHook(BaseHook):
    """Base of both hooks: the connection type, its default id and the ``analytics_conn_id`` name.

    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    conn_name_attr = "analytics_conn_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = "analytics"
    hook_name = "Analytics Platform"

    def __init__(self, analytics_conn_id: str = DEFAULT_CONN_ID, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.analytics_conn_id = analytics_conn_id
