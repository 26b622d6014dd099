"""Hooks: an Airflow connection turned into a configured Analytics Platform client."""

__all__: list[str] = []
