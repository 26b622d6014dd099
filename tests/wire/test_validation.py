"""Bad input fails before any request, with a message that says what to change."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire.errors import AnalyticsInputError, UnexpectedResponseError
from tests.support.fixtures import Api
from tests.support.names import JSON_HEADERS

BAD_IDS = ["", "../etc/passwd", "a/b", "wf 1", "x" * 65, "wf_1?x=1", "%2e%2e", None, 7]


@pytest.mark.parametrize("bad_id", BAD_IDS)
@pytest.mark.parametrize(
    "build",
    [
        lambda i: endpoints.get_execution(i, "ex_1"),
        lambda i: endpoints.get_execution("wf_1", i),
        lambda i: endpoints.cancel_execution("wf_1", i),
        lambda i: endpoints.execute_workflow(i),
        lambda i: endpoints.get_sync_status(i),
        lambda i: endpoints.get_report(i),
        lambda i: endpoints.download_report(i),
        lambda i: endpoints.chart_data(i),
        lambda i: endpoints.update_dashboard(i, "name"),
        lambda i: endpoints.create_chart("c", "line", i, "select 1"),
        lambda i: endpoints.generate_report([i]),
    ],
)
def test_malformed_ids_are_refused(build: Any, bad_id: Any) -> None:
    with pytest.raises(AnalyticsInputError, match="letters, digits"):
        build(bad_id)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: endpoints.generate_report([]), "non-empty list"),
        (lambda: endpoints.generate_report("db_1"), "non-empty list"),
        (lambda: endpoints.generate_report(["db_1"], format="docx"), "pdf, csv, xlsx, html"),
        (lambda: endpoints.execute_workflow("wf_1", inputs=["a"]), "inputs must be a mapping"),  # type: ignore[arg-type]  # the wrong type is the test
        (lambda: endpoints.create_chart("c", "donut", "ds_1", "q"), "line, bar"),
        (lambda: endpoints.create_chart("", "line", "ds_1", "q"), "name must be a non-empty string"),
        (lambda: endpoints.create_workflow("w", "not-a-dict"), "configuration must be a mapping"),  # type: ignore[arg-type]  # the wrong type is the test
        (lambda: endpoints.update_dashboard("db_1", "n", if_match="3"), "if_match"),  # type: ignore[arg-type]  # the wrong type is the test
        (lambda: endpoints.update_dashboard("db_1", "n", tags="finance"), "tags must be a list"),
        (lambda: endpoints.create_workflow("w", {}, idempotency_key="has space"), "idempotency_key"),
        (lambda: endpoints.create_workflow("w", {}, idempotency_key="k" * 256), "idempotency_key"),
        (lambda: endpoints.list_workflows(page_size=0), "1 to 100"),
        (lambda: endpoints.list_dashboards(page_size=101), "1 to 100"),
        (lambda: endpoints.create_workflow("w", {"blob": "x" * (1024 * 1024)}), "at most 1 MiB"),
    ],
)
def test_bad_arguments_say_what_to_change(build: Any, message: Any) -> None:
    with pytest.raises(AnalyticsInputError, match=message):
        build()


def test_refused_input_sends_nothing(api: Api, sandbox: SandboxServer) -> None:
    with pytest.raises(AnalyticsInputError):
        api.call(endpoints.get_execution("wf_1", "../../admin"))
    assert sandbox.state.requests == []


def test_ids_are_placed_in_the_path_verbatim() -> None:
    spec = endpoints.get_execution("wf_A-1", "ex_b_2").spec
    assert spec.path == "/v1/workflows/wf_A-1/executions/ex_b_2"
    assert spec.route == "/v1/workflows/{workflow_id}/executions/{execution_id}"


@pytest.mark.parametrize(
    ("start", "path"),
    [
        (lambda: endpoints.execute_workflow("wf_nightly_enrichment"), "/v1/workflows/wf_nightly_enrichment/execute"),
        (lambda: endpoints.generate_report(["db_sales"]), "/v1/reports"),
    ],
    ids=["execution", "report"],
)
def test_a_start_answered_with_an_id_no_request_may_carry_is_refused(
    api: Api, sandbox: SandboxServer, start: Any, path: str
) -> None:
    """The id of started work ends up in later requests' paths, XCom and links: the start's answer is checked."""
    body = json.dumps({"id": "../../admin", "workflow_id": "wf_nightly_enrichment", "status": "queued"})
    sandbox.state.inject(Fault.respond(202, headers=JSON_HEADERS, body=body, path=f"^{path}$"))
    with pytest.raises(UnexpectedResponseError, match=rf"^POST {path}: .* id '\.\./\.\./admin', which is not an id"):
        api.call(start())
