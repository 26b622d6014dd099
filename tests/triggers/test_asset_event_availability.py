"""Where the event trigger exists: asset watchers came with Airflow 3.0, and on Airflow 2 the provider says so."""

from __future__ import annotations

import importlib
import sys

import pytest

from airflow_provider_analytics.version_compat import AIRFLOW_V_3_0_PLUS

MODULE = "airflow_provider_analytics.triggers.asset_events"


def test_the_event_trigger_imports_on_airflow_3_and_refuses_airflow_2_in_a_sentence() -> None:
    from airflow import __version__

    if AIRFLOW_V_3_0_PLUS:
        from airflow.providers.common.compat.triggers import BaseEventTrigger

        module = importlib.import_module(MODULE)
        assert issubclass(module.DataSourceSyncedEventTrigger, BaseEventTrigger)
        return
    with pytest.raises(ImportError) as raised:
        importlib.import_module(MODULE)
    # The provider's own sentence, not a name Airflow 2 lacks (that would be a ModuleNotFoundError, or an
    # ImportError naming the module it was looked for in).
    assert type(raised.value) is ImportError
    assert raised.value.name is None
    message = str(raised.value)
    assert message.startswith("DataSourceSyncedEventTrigger (event-driven scheduling with an AssetWatcher)")
    assert f"needs Airflow 3.0 or later (this is Airflow {__version__})" in message
    assert "docs/compatibility.md" in message
    assert MODULE not in sys.modules  # a failed import leaves nothing half-made behind
