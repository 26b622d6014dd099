"""Moved to :mod:`airflow_provider_analytics.connection` (``_config.py``, ``_notes.py``); warns until 2.0.0.

Reading the connection is not public API: the hook does it (``AnalyticsHook.connection``, ``AnalyticsHook.client``).
"""

from airflow_provider_analytics._deprecation import moved

__all__: list[str] = []

_HOMES = {
    "airflow_provider_analytics.connection._config": [
        "ConnectionLike",
        "base_url_of",
        "client_config_from_connection",
        "ui_url_of",
    ],
    "airflow_provider_analytics.connection._notes": [
        "connection_name",
        "connection_notes",
        "is_generated_test_id",
        "known_extras",
        "not_the_api",
        "redact",
        "with_notes",
    ],
}

__getattr__ = moved(__name__, {name: f"{home}:{name}" for home, names in _HOMES.items() for name in names})
