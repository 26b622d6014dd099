"""Moved to ``airflow_provider_analytics.wire._core`` (internal); warns until 2.0.0."""

from airflow_provider_analytics._deprecation import moved_module

__all__: list[str] = []
__getattr__ = moved_module(__name__, "airflow_provider_analytics.wire._core")
