"""A reference that is one platform object's id and another's name is refused, naming both (issue 33)."""

from __future__ import annotations

import pytest

from airflow_provider_analytics.definitions._apply import plan_definitions
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.definitions.helpers import READS, sent
from tests.support.names import DATA_SOURCE


def test_a_layout_chart_that_is_one_charts_id_and_anothers_name_is_refused(
    hook: AnalyticsHook, sandbox: SandboxServer
) -> None:
    by_id = hook.create_chart("Revenue", "line", DATA_SOURCE, "select 1")
    by_name = hook.create_chart(by_id["id"], "bar", DATA_SOURCE, "select 2")  # named like the other's id
    before = len(sandbox.state.requests)
    layout = [{"chart": by_id["id"], "x": 0, "y": 0, "w": 6, "h": 4}]
    with pytest.raises(AnalyticsInputError) as refused:
        plan_definitions(hook, {"dashboards": [{"name": "Board", "layout": layout}]})
    message = str(refused.value)
    assert f"layout[0].chart: {by_id['id']!r} is both the id of the chart named 'Revenue'" in message
    assert f"the name of another chart on the platform ({by_name['id']})" in message
    assert sent(sandbox, before) == READS  # nothing written


def test_a_data_source_that_is_one_sources_id_and_anothers_name_is_refused(
    hook: AnalyticsHook, sandbox: SandboxServer
) -> None:
    other = hook.connect_data_source(DATA_SOURCE, "postgres", {"host": "db", "database": "x", "user": "u"})
    chart = {"name": "Revenue", "type": "line", "data_source": DATA_SOURCE, "query": "select 1"}
    with pytest.raises(AnalyticsInputError) as refused:
        plan_definitions(hook, {"charts": [chart]})
    message = str(refused.value)
    assert f"data_source: {DATA_SOURCE!r} is both the id of the data source named" in message
    assert other["id"] in message
