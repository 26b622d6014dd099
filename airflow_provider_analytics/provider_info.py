"""Provider metadata read by Airflow's providers manager through the ``apache_airflow_provider`` entry point.

Airflow validates this dict at import time of every ``airflow`` command, so a mistake here breaks them
all: ``tests/test_provider_info.py`` checks it against both of Airflow's schemas.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_analytics import __version__

__all__ = ["get_provider_info"]

INTEGRATION = "Analytics Platform"


def get_provider_info() -> dict[str, Any]:
    """Return the provider's registration metadata (package, hooks, triggers, connection type)."""
    # Airflow 2 names the asset URI handlers "dataset-uris", 3.x "asset-uris". Read here from
    # Airflow's __version__, set before Airflow imports anything: Airflow may be importing right now, started
    # by version_compat itself, and calls this on the way.
    from airflow import __version__ as airflow_version

    asset_uris_key = "asset-uris" if int(airflow_version.split(".")[0]) >= 3 else "dataset-uris"
    return {
        "package-name": "airflow-provider-analytics",
        "name": "Analytics Platform",
        "description": "Hooks, operators, sensors and triggers for the Analytics Platform REST API (/v1).",
        "state": "ready",
        "source-date-epoch": 1795392000,  # when this release was prepared; make dist builds with it
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": INTEGRATION,
                "external-doc-url": "https://github.com/airflow-provider-analytics/airflow-provider-analytics",
                "tags": ["service"],
            }
        ],
        "hooks": [
            {
                "integration-name": INTEGRATION,
                "python-modules": ["airflow_provider_analytics.hooks.analytics"],
            }
        ],
        "operators": [
            {
                "integration-name": INTEGRATION,
                "python-modules": [
                    "airflow_provider_analytics.operators.workflows",
                    "airflow_provider_analytics.operators.reports",
                    "airflow_provider_analytics.operators.charts",
                    "airflow_provider_analytics.operators.data_sources",
                    "airflow_provider_analytics.operators.dashboards",
                    "airflow_provider_analytics.operators.definitions",
                ],
            }
        ],
        "sensors": [
            {
                "integration-name": INTEGRATION,
                "python-modules": [
                    "airflow_provider_analytics.sensors.data_sources",
                    "airflow_provider_analytics.sensors.workflows",
                ],
            }
        ],
        "triggers": [
            {
                "integration-name": INTEGRATION,
                "python-modules": [
                    "airflow_provider_analytics.triggers.executions",
                    "airflow_provider_analytics.triggers.reports",
                    "airflow_provider_analytics.triggers.data_sources",
                    "airflow_provider_analytics.triggers.asset_events",
                ],
            }
        ],
        "extra-links": [
            "airflow_provider_analytics.operators.links.ExecutionLink",
            "airflow_provider_analytics.operators.links.ReportLink",
            "airflow_provider_analytics.operators.links.DashboardLink",
        ],
        # analytics://<host>/<kind>/<id>: Airflow checks and normalises such Assets with the handler; the
        # OpenLineage provider names them as the operators' lineage does (docs/lineage.md).
        asset_uris_key: [
            {
                "schemes": ["analytics"],
                "handler": "airflow_provider_analytics.lineage.uris.normalize_uri",
                "to_openlineage_converter": "airflow_provider_analytics.lineage.uris.convert_asset_to_openlineage",
            }
        ],
        # Airflow 3.2+ reads the connection form from here; AnalyticsHook generates the same form for
        # earlier releases from these entries (connection/_form.py).
        "connection-types": [
            {
                "connection-type": "analytics",
                "hook-class-name": "airflow_provider_analytics.hooks.analytics.AnalyticsHook",
                "hook-name": "Analytics Platform",
                "ui-field-behaviour": {
                    "hidden-fields": ["login", "port", "schema"],
                    "relabeling": {"host": "Base URL", "password": "API token"},
                    "placeholders": {
                        "host": "https://api.analytics.example.com",
                        "password": "the /v1 API token, without 'Bearer '",
                    },
                },
                "conn-fields": {
                    "workspace_id": {
                        "label": "Workspace ID",
                        "description": "Workspace to act in (sent as X-Workspace-Id); empty uses the token's default.",
                        "schema": {"type": ["string", "null"], "pattern": "^[A-Za-z0-9_-]{1,64}$"},
                    },
                    "timeout": {
                        "label": "Request timeout (seconds)",
                        "description": "Total time one HTTP request may take (connect, send, read). Default 30.",
                        "schema": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 3600, "default": 30},
                    },
                    "max_retries": {
                        "label": "Max retries",
                        "description": "Retries of a failed idempotent request (429, 5xx, network). Default 4.",
                        "schema": {"type": ["integer", "null"], "minimum": 0, "maximum": 20, "default": 4},
                    },
                    "max_response_bytes": {
                        "label": "Largest API answer (bytes)",
                        "description": "A JSON answer larger than this (decompressed) fails the call. Default 3 MiB.",
                        "schema": {"type": ["integer", "null"], "minimum": 1024, "default": 3145728},
                    },
                    "max_download_bytes": {
                        "label": "Largest report download (bytes)",
                        "description": "A report announced larger than this is refused before writing. Default 10 GiB.",
                        "schema": {"type": ["integer", "null"], "minimum": 1024, "default": 10737418240},
                    },
                    "min_download_rate": {
                        "label": "Slowest report download (bytes/s)",
                        "description": "A download slower than this over 60 s fails. Default 32 KiB/s; 0: no floor.",
                        "schema": {"type": ["integer", "null"], "minimum": 0, "default": 32768},
                    },
                    "verify": {
                        "label": "TLS verification",
                        "description": "true, false, or the path of a CA bundle file. Default true.",
                        # One line on Airflow 3.2+: its form makes a field of several types (no enum, no examples)
                        # a 6-row text area, and a field whose first type is boolean a switch, which takes no path.
                        "schema": {
                            "type": ["string", "boolean", "null"],
                            "default": True,
                            "examples": ["true", "false", "/etc/ssl/certs/ca-certificates.crt"],
                        },
                    },
                    "ui_url": {
                        "label": "Platform UI URL",
                        "description": "Base URL of the platform's web UI, used for task links.",
                        "schema": {"type": ["string", "null"], "format": "url"},
                    },
                    "allow_insecure_http": {
                        "label": "Allow plain http:// to non-loopback hosts",
                        "description": "Sends the token unencrypted. Only for trusted private networks.",
                        "schema": {"type": ["boolean", "null"], "default": False},
                    },
                    "rate_limit_redis_conn_id": {
                        "label": "Rate limit store (Redis connection id)",
                        "description": "A redis connection through which every process on this token shares one "
                        "rate limiter. Empty: each process paces on its own.",
                        "schema": {"type": ["string", "null"], "pattern": "^[A-Za-z0-9_.~:-]{1,250}$"},
                    },
                    "secret_sources": {
                        "label": "Secrets definitions may read",
                        "description": "Airflow connection ids and variable keys a definitions file may refer to"
                        " (glob patterns, comma-separated). Default: analytics_*.",
                        "schema": {"type": ["string", "null"], "examples": ["analytics_*, warehouse_db"]},
                    },
                },
            }
        ],
    }
