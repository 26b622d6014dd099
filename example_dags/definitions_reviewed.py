"""(i) Apply only the plan someone reviewed: plan, a person's approval, then apply.

Needs Airflow 3.1 or later (``ApprovalOperator``); on earlier releases this file does not import, and the gate is a
person's step outside Airflow (docs/guides/review-definitions.md).
``plan`` plans the files in ``definitions/reviewed/`` and writes nothing; ``approve`` pauses the run until a
person approves it in the Airflow UI (Browse, Required Actions) or through the REST API, after reading the plan's
table in ``plan``'s log; ``apply`` plans again and applies only if that gives the same changes as the plan that
was approved. A file or a platform object changed in between fails ``apply`` (without retries), listing what
moved, and nothing is written. ``make demo`` gives the approval through the REST API.
"""

from __future__ import annotations

from datetime import datetime

from airflow.providers.common.compat.sdk import DAG
from airflow.providers.standard.operators.hitl import ApprovalOperator

from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator

with DAG(
    dag_id="analytics_definitions_reviewed",
    schedule=None,
    start_date=datetime(2026, 11, 1),
    catchup=False,
    max_active_runs=1,
    tags=["analytics", "example"],
):
    # [START howto_operator_analytics_reviewed_definitions]
    plan = ApplyDefinitionsOperator(task_id="plan", definitions="definitions/reviewed/*.yaml", plan_only=True)
    approve = ApprovalOperator(
        task_id="approve",
        subject="Apply the definitions plan?",
        body="The plan task's log has the table; its return value in XCom has every change.",
    )
    apply = ApplyDefinitionsOperator(
        task_id="apply", definitions="definitions/reviewed/*.yaml", reviewed_plan=plan.output, retries=2
    )
    plan >> approve >> apply
    # [END howto_operator_analytics_reviewed_definitions]
