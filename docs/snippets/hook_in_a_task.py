"""The hook in a ``@task``, as docs/hook.md shows it; tests/docs/test_snippets.py runs it against the sandbox."""

from __future__ import annotations

# [START hook_in_a_task]
import time

from airflow.providers.common.compat.sdk import task

from airflow_provider_analytics.hooks.analytics import AnalyticsHook


@task
def refresh_and_export(day: str, export_dir: str) -> dict:
    with AnalyticsHook() as hook:  # analytics_conn_id="analytics_default"; closes its connections at the end
        execution = hook.execute_workflow(
            "wf_nightly_enrichment", inputs={"day": day}, idempotency_key=f"enrich-{day}"
        )  # the same key on a task retry returns the same execution instead of starting another
        names = [workflow["name"] for workflow in hook.list_workflows(page_size=50)]  # pages fetched lazily
        rows = hook.iter_chart_data("ch_revenue")
        total = sum(row[1] for row in rows)  # rows.columns is set once the first page arrived
        report = hook.generate_report(["db_sales"], format="csv", name=f"sales-{day}")
        while report["status"] in ("pending", "generating"):  # an operator would defer instead of sleeping
            time.sleep(0.2)
            report = hook.get_report(report["id"])
        result = hook.download_report(report["id"], f"{export_dir}/", overwrite=True)  # or "s3://bucket/path/"
        return {
            "execution": execution["id"],
            "workflows": len(names),
            "revenue": total,
            "file": result.uri,
            "sha256": result.sha256,
        }


# [END hook_in_a_task]
