"""Apache Airflow provider for the Analytics Platform REST API (/v1)."""

__version__ = "1.0.0"
