"""Moved: the event contract is in ``airflow_provider_analytics._jobs.events`` (internal), and
``UnexpectedEventError`` in :mod:`airflow_provider_analytics.operators.errors`; the old names warn until 2.0.0."""

from airflow_provider_analytics._deprecation import moved
from airflow_provider_analytics._jobs import events as _events

__all__: list[str] = []

__getattr__ = moved(
    __name__,
    {
        **{name: f"{_events.__name__}:{name}" for name in _events.__all__},
        "Outcome": "airflow_provider_analytics.wire._outcomes:Outcome",
        "WaitKind": "airflow_provider_analytics._jobs.base:JobKind",
        "UnexpectedEventError": "airflow_provider_analytics.operators.errors:UnexpectedEventError",
    },
)
