"""Believable sample data: what a small analytics team's workspaces would hold."""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow_provider_analytics.sandbox.domain.config import DEFAULT_WORKSPACE, MARKETING_WORKSPACE, Timings
from airflow_provider_analytics.sandbox.domain.records import (
    ChartRecord,
    DashboardRecord,
    DataSourceRecord,
    JsonDict,
    SyncAttempt,
    WorkflowRecord,
    Workspace,
)

# (id, name, type, connection)
_DATA_SOURCES: dict[str, list[tuple[str, str, str, JsonDict]]] = {
    DEFAULT_WORKSPACE: [
        ("ds_warehouse", "warehouse", "postgres",
         {"host": "warehouse.internal", "port": 5432, "database": "analytics", "user": "svc_analytics"}),
        ("ds_events", "product-events", "bigquery", {"project": "acme-events", "dataset": "events"}),
        ("ds_crm", "crm", "snowflake", {"account": "acme-eu1", "user": "svc_crm", "database": "CRM"}),
    ],
    MARKETING_WORKSPACE: [
        ("ds_ads", "ad-platforms", "bigquery", {"project": "acme-marketing", "dataset": "ads"}),
    ],
}  # fmt: skip
# (id, name, type, data source, query)
_CHARTS: dict[str, list[tuple[str, str, str, str, str]]] = {
    DEFAULT_WORKSPACE: [
        ("ch_revenue", "Daily revenue", "line", "ds_warehouse", "select day, revenue from sales_daily"),
        ("ch_orders_by_region", "Orders by region", "bar", "ds_warehouse",
         "select region, orders from orders_by_region"),
        ("ch_top_customers", "Top customers", "table", "ds_crm",
         "select customer_name, plan, revenue from top_customers"),
        ("ch_active_users", "Daily active users", "area", "ds_events", "select day, active_users from dau"),
        ("ch_conversion_rate", "Conversion rate", "number", "ds_events",
         "select day, conversion_rate from funnel_daily"),
        ("ch_channel_mix", "Sessions by channel", "pie", "ds_events",
         "select channel, sessions from sessions_by_channel"),
    ],
    MARKETING_WORKSPACE: [
        ("ch_campaign_spend", "Campaign spend", "bar", "ds_ads", "select day, campaign, spend from spend_daily"),
    ],
}  # fmt: skip
# (id, name, description, tags, chart ids)
_DASHBOARDS: dict[str, list[tuple[str, str, str, list[str], list[str]]]] = {
    DEFAULT_WORKSPACE: [
        ("db_sales", "Sales", "Revenue and orders, refreshed nightly", ["finance", "sales"],
         ["ch_revenue", "ch_orders_by_region", "ch_top_customers"]),
        ("db_product", "Product usage", "Activity and conversion", ["product"],
         ["ch_active_users", "ch_conversion_rate"]),
        ("db_marketing", "Marketing", "Acquisition channels", ["marketing"], ["ch_channel_mix", "ch_conversion_rate"]),
    ],
    MARKETING_WORKSPACE: [
        ("db_campaigns", "Campaigns", "Paid campaign performance", ["marketing"], ["ch_campaign_spend"]),
    ],
}  # fmt: skip
_WORKFLOWS: dict[str, list[str]] = {
    DEFAULT_WORKSPACE: [
        "nightly-enrichment", "churn-scoring", "revenue-rollup", "sessionize-events", "customer-360",
        "forecast-demand", "attribution-model", "dedupe-contacts", "fx-rates-import", "inventory-snapshot",
        "ltv-model", "marketing-spend-sync", "nps-ingest", "orders-backfill", "product-catalog-sync",
        "refund-audit", "sales-pipeline-refresh", "search-ranking-eval", "support-tickets-ingest",
        "subscription-metrics", "fraud-scoring", "warehouse-vacuum", "weekly-cohorts", "ab-test-readout",
        "gdpr-erasure", "legacy-export",
    ],
    MARKETING_WORKSPACE: ["campaign-attribution", "budget-pacing"],
}  # fmt: skip
# A seeded workflow that always fails, so demos and tests can show failure handling without setup.
ALWAYS_FAILING_WORKFLOW = "wf_legacy_export"
_STEPS = ["extract", "transform", "load"]


def _layout(chart_ids: list[str]) -> list[JsonDict]:
    return [
        {"chart_id": chart_id, "x": (i % 2) * 6, "y": (i // 2) * 4, "w": 6, "h": 4}
        for i, chart_id in enumerate(chart_ids)
    ]


def seed_workspace(workspace: Workspace, now: datetime, timings: Timings) -> None:
    """Fill a workspace with its sample data (workspaces without sample data stay empty).

    :param workspace: the (empty) workspace to fill.
    :param now: the sandbox time of the seeding; records are dated in the weeks before it.
    :param timings: the sandbox timings (seeded syncs finished about a day ago).
    """
    created = now - timedelta(days=60)
    for source_id, name, source_type, connection in _DATA_SOURCES.get(workspace.id, []):
        source = DataSourceRecord(source_id, name, source_type, dict(connection), created)
        synced_at = now - timedelta(days=1)
        source.attempt = SyncAttempt(started_at=synced_at - timedelta(seconds=timings.sync_total), outcome="synced")
        workspace.data_sources[source_id] = source
    for chart_id, name, chart_type, source_id, query in _CHARTS.get(workspace.id, []):
        workspace.charts[chart_id] = ChartRecord(
            chart_id, name, chart_type, source_id, query, {}, created + timedelta(days=1), created + timedelta(days=1)
        )
    for dashboard_id, name, description, tags, chart_ids in _DASHBOARDS.get(workspace.id, []):
        workspace.dashboards[dashboard_id] = DashboardRecord(
            dashboard_id, name, description, list(tags), _layout(chart_ids), 1,
            created + timedelta(days=2), created + timedelta(days=2),
        )  # fmt: skip
    for position, name in enumerate(_WORKFLOWS.get(workspace.id, [])):
        workflow_id = "wf_" + name.replace("-", "_")
        configuration: JsonDict = {
            "steps": [{"name": step, "image": f"acme/{name}-{step}:1.4"} for step in _STEPS],
            "schedule": f"0 {position % 24} * * *",
        }
        if workflow_id == ALWAYS_FAILING_WORKFLOW:
            configuration["sandbox"] = {"outcome": "failed"}
        when = created + timedelta(days=3, hours=position)
        workspace.workflows[workflow_id] = WorkflowRecord(
            workflow_id, name, f"{name.replace('-', ' ').capitalize()} job", configuration, when, when
        )
