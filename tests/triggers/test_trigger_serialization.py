"""Trigger serialization: every trigger round-trips through its own kwargs, Airflow's serde and the Trigger row."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil

import pytest

import airflow_provider_analytics.triggers as triggers_package
from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger
from airflow_provider_analytics.triggers.data_sources import DataSourceSyncTrigger
from airflow_provider_analytics.triggers.executions import ExecutionTrigger
from airflow_provider_analytics.triggers.reports import ReportTrigger
from airflow_provider_analytics.version_compat import AIRFLOW_V_3_0_PLUS
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.support.names import DATA_SOURCE, WORKFLOW
from tests.support.triggers import rebuilt_through_trigger_row

# Trigger modules that need Airflow 3 (asset watchers): importing them on Airflow 2 raises ImportError.
NEEDS_AIRFLOW_3 = {"asset_events"}

TRIGGERS = [
    pytest.param(ExecutionTrigger(workflow_id=WORKFLOW, execution_id="ex_abc123", poll_interval=5), id="execution"),
    pytest.param(
        ExecutionTrigger(
            workflow_id=WORKFLOW,
            execution_id="ex_abc123",
            poll_interval=2.5,
            deadline=1795000000.25,
            analytics_conn_id="analytics_other",
        ),
        id="execution-deadline-conn",
    ),
    pytest.param(ReportTrigger(report_id="rp_abc123", poll_interval=10), id="report"),
    pytest.param(ReportTrigger(report_id="rp_abc123", poll_interval=1, deadline=1795000000.0), id="report-deadline"),
    pytest.param(
        DataSourceSyncTrigger(data_source_id=DATA_SOURCE, synced_after="2026-11-21T10:00:00.123456Z", poll_interval=30),
        id="sync",
    ),
    pytest.param(
        DataSourceSyncTrigger(
            data_source_id=DATA_SOURCE,
            synced_after="2026-11-21T11:00:00+01:00",
            fail_on_sync_failure=False,
            poll_interval=0.5,
            deadline=1795000000.5,
            analytics_conn_id="analytics_other",
        ),
        id="sync-no-fail-deadline-conn",
    ),
]


def test_every_trigger_class_is_round_tripped() -> None:
    """A new trigger class must be added to ``TRIGGERS`` so its serialization is tested."""
    found = set()
    for info in pkgutil.iter_modules(triggers_package.__path__):
        if info.name in NEEDS_AIRFLOW_3 and not AIRFLOW_V_3_0_PLUS:
            continue  # its import refuses Airflow 2 (test_asset_event_availability.py); it has no poll trigger
        module = importlib.import_module(f"{triggers_package.__name__}.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(cls, AnalyticsPollTrigger)
                and not inspect.isabstract(cls)
                and cls.__module__ == module.__name__
            ):
                found.add(cls)
    tested = {type(param.values[0]) for param in TRIGGERS}
    assert found == tested


@pytest.mark.parametrize("trigger", TRIGGERS)
def test_serialize_round_trips(trigger: AnalyticsPollTrigger) -> None:
    classpath, kwargs = trigger.serialize()
    assert json.loads(json.dumps(kwargs)) == kwargs  # plain JSON values: no datetimes, tuples, enums
    assert {"poll_interval", "deadline", "analytics_conn_id"} <= set(kwargs)
    assert set(trigger.target) <= set(kwargs)

    module_name, _, class_name = classpath.rpartition(".")
    cls = getattr(importlib.import_module(module_name), class_name)
    assert cls is type(trigger)
    rebuilt = cls(**kwargs)
    assert rebuilt.serialize() == (classpath, kwargs)
    assert rebuilt.target == trigger.target


@pytest.mark.parametrize("trigger", TRIGGERS)
def test_round_trips_through_airflow_serde_and_trigger_row(trigger: AnalyticsPollTrigger) -> None:
    """The paths Airflow really uses: serde at defer time, the encrypted ``Trigger`` row, then re-import."""
    rebuilt_through_trigger_row(trigger)


@pytest.mark.parametrize("synced_after", ["", "yesterday", "2026-11-21T10:00:00", "2026-11-21"])
def test_sync_trigger_refuses_a_time_without_an_offset(synced_after: str) -> None:
    with pytest.raises(AnalyticsInputError, match="synced_after must be an ISO 8601 time with an offset"):
        DataSourceSyncTrigger(data_source_id=DATA_SOURCE, synced_after=synced_after, poll_interval=1)
