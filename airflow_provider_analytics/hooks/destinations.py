"""Moved to :mod:`airflow_provider_analytics.destinations` (``DownloadResult``; the rest to its private
``_target.py``, ``_atomic.py`` and ``_download.py``); warns until 2.0.0.

Only ``DownloadResult`` stays public: download with
:meth:`~airflow_provider_analytics.hooks.analytics.AnalyticsHook.download_report`, which takes a path, a URI or an
``ObjectStoragePath`` as it is.
"""

from airflow_provider_analytics._deprecation import moved

__all__: list[str] = []

_HOMES = {
    "airflow_provider_analytics.destinations": ["DownloadResult"],
    "airflow_provider_analytics.destinations._target": ["AnyPath", "Destination", "refuse_existing"],
    "airflow_provider_analytics.destinations._atomic": ["write_atomically"],
    "airflow_provider_analytics.destinations._download": ["download_report_to"],
}

__getattr__ = moved(__name__, {name: f"{home}:{name}" for home, names in _HOMES.items() for name in names})
