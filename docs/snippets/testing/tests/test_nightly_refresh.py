# [START testing_hook]
import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.wire.errors import NotFoundError


def test_a_start_survives_two_platform_outages(analytics_sandbox):
    # The next two starts of any workflow answer 503; the hook retries them (a POST carries an Idempotency-Key).
    analytics_sandbox.state.inject(Fault.status(503, method="POST", path="/execute$", times=2))
    with AnalyticsHook() as hook:  # analytics_default points at the sandbox for this test
        execution = hook.execute_workflow("wf_nightly_enrichment", inputs={"day": "2026-11-23"})
    posts = [r for r in analytics_sandbox.state.requests if r.method == "POST" and r.path.endswith("/execute")]
    assert len(posts) == 3
    assert [e["id"] for e in analytics_sandbox.state.executions()] == [execution["id"]]


def test_an_unknown_workflow_is_a_typed_error(analytics_sandbox):
    with AnalyticsHook() as hook, pytest.raises(NotFoundError) as raised:
        hook.execute_workflow("wf_does_not_exist")
    assert raised.value.status == 404


# [END testing_hook]


# [START testing_dag_run]
def test_the_dag_runs_and_fails_with_the_workflow(airflow_db, analytics_sandbox):
    try:
        from airflow.dag_processing.dagbag import DagBag  # Airflow 3.2 and later
    except ImportError:
        from airflow.models.dagbag import DagBag

    dag = DagBag().get_dag("nightly_refresh")  # the dags folder conftest.py set
    assert dag.test().state == "success"

    analytics_sandbox.state.set_execution_outcome("wf_nightly_enrichment", "failed", error="step 'load' failed")
    assert dag.test().state == "failed"


# [END testing_dag_run]
