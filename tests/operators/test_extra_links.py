"""Extra links: the URL an operator pushes is under the XCom key the Airflow UI reads the link from.

The UI never sees the operator itself, only the serialized DAG: Airflow 3 turns each link into an
``XComOperatorLink`` that reads the XCom under the link's ``xcom_key``; Airflow 2.11 rebuilds the provider's
link class and calls its ``get_link``, which reads ``version_compat.link_xcom_key`` (Airflow 2.11's links
have no ``xcom_key``). Reading the XCom table itself is Airflow's code and needs a database: it is exercised by
the whole-DAG runs in ``tests/airflow``.
"""

from __future__ import annotations

import importlib
from datetime import datetime
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import DAG

from airflow_provider_analytics.operators.links import AnalyticsLink, DashboardLink, ExecutionLink, ReportLink
from airflow_provider_analytics.operators.reports import GenerateReportOperator
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.version_compat import AIRFLOW_V_3_0_PLUS, link_xcom_key
from tests.support.context import make_context
from tests.support.names import WORKFLOW

URL = "https://ui.example.com/workflows/wf_x/executions/ex_1"


def _served_links(dag: Any, task_id: str) -> dict[str, Any]:
    """The task's links as the UI's side of Airflow has them: from the serialized DAG."""
    found = vars(importlib.import_module("airflow.serialization.serialized_objects"))
    # Airflow 3.3 calls the serializer DagSerialization, earlier releases SerializedDAG: looked up by name,
    # since mypy checks against 3.3 alone.
    serializer = found.get("DagSerialization") or found["SerializedDAG"]
    served = serializer.from_dict(serializer.to_dict(dag))
    links: dict[str, Any] = served.get_task(task_id).operator_extra_link_dict
    return links


def _key_the_ui_reads(link: Any) -> str:
    # Airflow 3: the XComOperatorLink's own key; Airflow 2.11: the provider's class, whose get_link reads this.
    return link.xcom_key if AIRFLOW_V_3_0_PLUS else link_xcom_key(link)


@pytest.mark.parametrize("link_class", [ExecutionLink, ReportLink, DashboardLink])
def test_persist_pushes_the_url_under_the_links_key(link_class: type[AnalyticsLink]) -> None:
    context = make_context()
    link_class.persist(context, URL)
    assert context["ti"].xcom == {link_xcom_key(link_class()): URL}
    assert link_xcom_key(link_class()) == f"_link_{link_class.__name__}"


def test_no_url_pushes_nothing() -> None:
    context = make_context()
    ExecutionLink.persist(context, None)
    ExecutionLink.persist(context, "")
    assert context["ti"].xcom == {}


@pytest.mark.parametrize(
    ("make_operator", "link_name", "link_class"),
    [
        (lambda: ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW), "Analytics execution", ExecutionLink),
        (lambda: GenerateReportOperator(task_id="t", dashboard_ids=["db_sales"]), "Analytics report", ReportLink),
    ],
)
def test_the_ui_reads_the_link_from_the_key_the_operator_pushes_to(
    make_operator: Any, link_name: str, link_class: type[AnalyticsLink]
) -> None:
    with DAG("links", schedule=None, start_date=datetime(2026, 11, 1)) as dag:
        make_operator()
    served = _served_links(dag, "t")
    assert list(served) == [link_name]
    context = make_context()
    link_class.persist(context, URL)
    assert context["ti"].xcom == {_key_the_ui_reads(served[link_name]): URL}
