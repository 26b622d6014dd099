"""Apache Airflow provider for the Analytics Platform REST API (/v1)."""

__all__ = ["__version__"]

__version__ = "1.0.0"
