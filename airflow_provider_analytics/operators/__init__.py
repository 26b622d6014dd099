"""Operators that compose :class:`~airflow_provider_analytics.hooks.analytics.AnalyticsHook` into DAG tasks."""

__all__: list[str] = []
