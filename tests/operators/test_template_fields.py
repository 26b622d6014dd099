"""Every operator's and the sensor's template fields name attributes and render; building one sends nothing."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from datetime import UTC, datetime
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import BaseOperator

import airflow_provider_analytics.operators as operators_package
import airflow_provider_analytics.sensors as sensors_package
from airflow_provider_analytics.operators.charts import CreateChartOperator, GetChartDataOperator
from airflow_provider_analytics.operators.dashboards import CreateDashboardOperator, UpdateDashboardOperator
from airflow_provider_analytics.operators.data_sources import ConnectDataSourceOperator
from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator, ExportDefinitionsOperator
from airflow_provider_analytics.operators.reports import DownloadReportOperator, GenerateReportOperator
from airflow_provider_analytics.operators.workflows import CreateWorkflowOperator, ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor
from airflow_provider_analytics.sensors.workflows import WorkflowExecutionSensor
from tests.support.context import make_context
from tests.support.names import DATA_SOURCE, WORKFLOW

RENDER_CONTEXT: dict[str, Any] = {
    "ds": "2026-11-20",
    "run_id": "manual__2026-11-20",
    "data_interval_end": datetime(2026, 11, 20, tzinfo=UTC),
    "params": {
        "env": "prod",
        "workflow": WORKFLOW,
        "dashboard": "db_sales",
        "chart": "ch_revenue",
        "data_source": DATA_SOURCE,
        "report": "rp_abc123",
        "format": "csv",
        "version": 3,
        "execution": "ex_abc123",
    },
}

DASHBOARD_FIELDS: dict[str, tuple[Any, Any]] = {
    "name": ("Sales {{ ds }}", "Sales 2026-11-20"),
    "description": ("for {{ params.env }}", "for prod"),
    "tags": (["{{ params.env }}", "daily"], ["prod", "daily"]),
    "layout": ([{"chart_id": "{{ params.chart }}", "x": 0, "w": 6}], [{"chart_id": "ch_revenue", "x": 0, "w": 6}]),
}

# class -> (constructor arguments that are not templated, {template field: (Jinja input, rendered value)})
RENDER_CASES: dict[type[BaseOperator], tuple[dict[str, Any], dict[str, tuple[Any, Any]]]] = {
    ExecuteWorkflowOperator: (
        {},
        {
            "workflow_id": ("{{ params.workflow }}", WORKFLOW),
            "inputs": (
                {"day": "{{ ds }}", "envs": ["{{ params.env }}"], "nested": {"run": "{{ run_id }}"}, "n": 5},
                {"day": "2026-11-20", "envs": ["prod"], "nested": {"run": "manual__2026-11-20"}, "n": 5},
            ),
        },
    ),
    CreateWorkflowOperator: (
        {},
        {
            "name": ("etl-{{ params.env }}", "etl-prod"),
            "configuration": ({"steps": [{"name": "load-{{ ds }}"}]}, {"steps": [{"name": "load-2026-11-20"}]}),
            "description": ("built {{ ds }}", "built 2026-11-20"),
        },
    ),
    GenerateReportOperator: (
        {},
        {
            "dashboard_ids": (["{{ params.dashboard }}", "db_product"], ["db_sales", "db_product"]),
            "format": ("{{ params.format }}", "csv"),
            "name": ("sales-{{ ds }}", "sales-2026-11-20"),
            "parameters": ({"day": "{{ ds }}"}, {"day": "2026-11-20"}),
        },
    ),
    DownloadReportOperator: (
        {},
        {
            "report_id": ("{{ params.report }}", "rp_abc123"),
            "destination": ("/data/{{ params.env }}/{{ ds }}.pdf", "/data/prod/2026-11-20.pdf"),
        },
    ),
    CreateChartOperator: (
        {},
        {
            "name": ("Revenue {{ ds }}", "Revenue 2026-11-20"),
            "type": ("{{ 'line' }}", "line"),
            "data_source_id": ("{{ params.data_source }}", DATA_SOURCE),
            "query": (
                "SELECT day, value FROM t WHERE day = '{{ ds }}'",
                "SELECT day, value FROM t WHERE day = '2026-11-20'",
            ),
            "options": ({"color": "{{ params.env }}"}, {"color": "prod"}),
        },
    ),
    GetChartDataOperator: (
        {},
        {
            "chart_id": ("{{ params.chart }}", "ch_revenue"),
            "destination": ("/data/{{ ds }}.csv", "/data/2026-11-20.csv"),
        },
    ),
    ConnectDataSourceOperator: (
        {},
        {
            "name": ("warehouse-{{ params.env }}", "warehouse-prod"),
            "type": ("{{ 'postgres' }}", "postgres"),
            "connection": (
                {
                    "host": "{{ params.env }}.db.internal",
                    "database": "dw",
                    "user": "svc",
                    "password": "{{ params.env }}-pw",
                },
                {"host": "prod.db.internal", "database": "dw", "user": "svc", "password": "prod-pw"},
            ),
        },
    ),
    CreateDashboardOperator: ({}, DASHBOARD_FIELDS),
    UpdateDashboardOperator: (
        {},
        {
            "dashboard_id": ("{{ params.dashboard }}", "db_sales"),
            "if_match": ("{{ params.version }}", "3"),
            **DASHBOARD_FIELDS,
        },
    ),
    ApplyDefinitionsOperator: (
        {},
        {
            "definitions": (
                [{"dashboards": [{"name": "Sales {{ params.env }}", "tags": ["{{ ds }}"], "layout": []}]}],
                [{"dashboards": [{"name": "Sales prod", "tags": ["2026-11-20"], "layout": []}]}],
            ),
            # A plan task's output arrives resolved; a literal plan's strings render like any template.
            "reviewed_plan": (
                {"changes": [{"kind": "dashboard", "name": "Sales {{ params.env }}", "action": "create"}]},
                {"changes": [{"kind": "dashboard", "name": "Sales prod", "action": "create"}]},
            ),
        },
    ),
    ExportDefinitionsOperator: (
        {},
        {
            "destination": ("/defs/{{ params.env }}/", "/defs/prod/"),
            "kinds": (["{{ 'charts' }}"], ["charts"]),
            "names": (["Sales {{ params.env }}"], ["Sales prod"]),
        },
    ),
    WorkflowExecutionSensor: (
        {},
        {
            "workflow_id": ("{{ params.workflow }}", WORKFLOW),
            "execution_id": ("{{ params.execution }}", "ex_abc123"),
        },
    ),
    DataSourceSyncedSensor: (
        {},
        {
            "data_source_id": ("{{ params.data_source }}", DATA_SOURCE),
            "synced_after": ("{{ data_interval_end }}", "2026-11-20 00:00:00+00:00"),
        },
    ),
}


def provider_operator_classes() -> set[type[BaseOperator]]:
    """Every concrete operator and sensor the provider ships (abstract, private and unconfigured bases excluded)."""
    found: set[type[BaseOperator]] = set()
    for package in (operators_package, sensors_package):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            for name, cls in inspect.getmembers(module, inspect.isclass):
                if (
                    issubclass(cls, BaseOperator)
                    and cls.__module__ == module.__name__
                    and not name.startswith("_")
                    and not inspect.isabstract(cls)  # a base to configure (a wait's job and trigger) too
                    and cls.execute is not BaseOperator.execute
                ):
                    found.add(cls)
    return found


# A field given instead of another (exactly one of the two, names instead of ids): rendered in a build of its own.
ALTERNATIVE_FIELDS: dict[type[BaseOperator], tuple[str, dict[str, tuple[Any, Any]]]] = {
    ExecuteWorkflowOperator: ("workflow_id", {"workflow_name": ("{{ params.env }}-enrichment", "prod-enrichment")}),
    GenerateReportOperator: ("dashboard_ids", {"dashboard_names": (["{{ params.env }}", "Sales"], ["prod", "Sales"])}),
    DataSourceSyncedSensor: ("data_source_id", {"data_source_name": ("{{ params.env }}-warehouse", "prod-warehouse")}),
}


def build(cls: type[BaseOperator], **overrides: Any) -> Any:
    fixed, fields = RENDER_CASES[cls]
    kwargs = {**fixed, **{name: template for name, (template, _) in fields.items()}, **overrides}
    return cls(task_id=f"render_{cls.__name__}", **kwargs)


def test_every_operator_and_sensor_has_a_render_case() -> None:
    assert provider_operator_classes() == set(RENDER_CASES)


@pytest.mark.parametrize("cls", list(RENDER_CASES), ids=lambda cls: cls.__name__)
def test_template_fields_name_attributes_and_all_render(cls: type[BaseOperator]) -> None:
    op = build(cls)
    _, fields = RENDER_CASES[cls]
    for name in op.template_fields:
        assert hasattr(op, name), f"{cls.__name__}.template_fields names {name!r}, which is not an attribute"
    # Every template field is covered by the case, so a new field must get a rendering check too.
    alternatives = ALTERNATIVE_FIELDS.get(cls, ("", {}))[1]
    assert set(op.template_fields) == set(fields) | set(alternatives)
    assert set(getattr(cls, "template_fields_renderers", {})) <= set(op.template_fields)

    op.render_template_fields(RENDER_CONTEXT)

    for name, (_, rendered) in fields.items():
        assert getattr(op, name) == rendered, name
    assert "{{" not in json.dumps({name: getattr(op, name) for name in op.template_fields}, default=str)


@pytest.mark.parametrize("cls", list(ALTERNATIVE_FIELDS), ids=lambda cls: cls.__name__)
def test_a_name_given_instead_of_an_id_renders(cls: type[BaseOperator]) -> None:
    replaced, fields = ALTERNATIVE_FIELDS[cls]
    fixed, usual = RENDER_CASES[cls]
    kwargs = {name: template for name, (template, _) in usual.items() if name != replaced}
    op: Any = cls(task_id=f"render_{cls.__name__}", **fixed, **kwargs, **{n: t for n, (t, _) in fields.items()})
    op.render_template_fields(RENDER_CONTEXT)
    for name, (_, rendered) in fields.items():
        assert getattr(op, name) == rendered, name
    assert getattr(op, replaced) is None


def test_rendered_sensor_time_is_a_usable_threshold() -> None:
    sensor = build(DataSourceSyncedSensor)
    sensor.render_template_fields(RENDER_CONTEXT)
    assert sensor.threshold({}) == datetime(2026, 11, 20, tzinfo=UTC)


def test_rendered_if_match_reaches_the_platform_as_the_version(sandbox: SandboxServer) -> None:
    op = build(UpdateDashboardOperator, layout=[{"chart_id": "ch_revenue"}])
    op.render_template_fields({**RENDER_CONTEXT, "params": {**RENDER_CONTEXT["params"], "version": 1}})
    context = make_context()
    dashboard = op.execute(context)
    (put,) = [r for r in sandbox.state.requests if r.method == "PUT"]
    assert put.path == "/v1/dashboards/db_sales"
    assert put.headers["if-match"] == '"1"'
    assert put.json["tags"] == ["prod", "daily"]
    assert dashboard["version"] == 2
    assert context["ti"].xcom["dashboard_id"] == "db_sales"


def test_nothing_touches_the_network_at_construction(sandbox: SandboxServer) -> None:
    for cls in RENDER_CASES:
        build(cls)
    assert sandbox.state.requests == []
