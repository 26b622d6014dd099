"""Hooks: an Airflow connection turned into a configured Analytics Platform client."""

# Defined here, not in hooks/base.py, so that the operators and sensors name it without importing a hook module
# (nor Airflow's BaseHook) every time a DAG file that uses them is parsed.
DEFAULT_CONN_ID = "analytics_default"

__all__ = ["DEFAULT_CONN_ID"]
