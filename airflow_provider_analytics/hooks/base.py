"""What both hooks share: the connection type, its default id and the ``analytics_conn_id`` name.

Reading the connection into a client config is in ``connection/_config.py``, imported by the hooks' methods:
this module is imported by every DAG file that uses an operator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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


_CONFIG = "airflow_provider_analytics.connection._config"
# Names this module had in a release, still importable with a DeprecationWarning until 2.0.0: the hooks' base
# was AnalyticsConnection in 1.0.0; the config helpers moved to connection/_config.py.
_OLD_NAMES = {
    "AnalyticsConnection": f"{__name__}:AnalyticsBaseHook",
    "masked_config": f"{_CONFIG}:masked_config",
    "prepared_config": f"{_CONFIG}:prepared_config",
    "quiet_httpx_request_lines": f"{_CONFIG}:quiet_httpx_request_lines",
}

if not TYPE_CHECKING:  # at run time only: for mypy the old names do not exist, so new code cannot use them

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):  # the import system's own lookups (__path__): never load the shim for them
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from airflow_provider_analytics._deprecation import moved  # on such a lookup only, not at parse time

        return moved(__name__, _OLD_NAMES, wrapped=True)(name)
