"""(h) Adopting definitions on a workspace that already has dashboards: export what exists, then check the files.

``export`` writes the workspace's data sources, charts, dashboards and workflows as definition files, one per
object, under the export folder (four listings, nothing else): charts name their data source and dashboards
their charts by name, and a secret connection field is a reference to an Airflow connection, never a value.
``drift_check`` then plans those files against the same workspace: nothing to change, so it passes; commit the
files and apply them from then on (``definitions_as_code.py``). Run it by hand once, and again to see what
changed on the platform since (a re-export of an unchanged workspace writes the same bytes).
"""

from __future__ import annotations

from datetime import datetime

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator, ExportDefinitionsOperator

EXPORTED = "{{ var.value.get('analytics_export_dir', '/tmp/analytics-exports') }}/definitions"

with DAG(
    dag_id="analytics_definitions_export",
    schedule=None,
    start_date=datetime(2026, 11, 1),
    catchup=False,
    tags=["analytics", "example"],
):
    # [START howto_operator_analytics_export_definitions]
    export = ExportDefinitionsOperator(
        task_id="export",
        destination=f"{EXPORTED}/",  # a folder: local, or a URI such as s3://bucket/definitions/
        split_by="object",  # charts/weekly-revenue.yaml ...; "kind" writes charts.yaml ...
    )
    drift_check = ApplyDefinitionsOperator(
        task_id="drift_check",
        definitions=f"{EXPORTED}/*/*.yaml",
        plan_only=True,
        fail_on_changes=True,  # fails if the export would not plan as unchanged
    )
    export >> drift_check
    # [END howto_operator_analytics_export_definitions]
