"""DataSourceSyncedEventTrigger's stored form: what Airflow keeps of a watcher, and how it recognises it again.

The DAG processor identifies a watcher's trigger by ``BaseEventTrigger.hash(classpath, kwargs)`` of
its encoded form (``encode_trigger``; ``_encode_trigger`` before 3.2: ``tests/support/triggers.py``,
``encode_watcher_trigger``) in ``dag_processing/collection.py``, comparing the hash of every fresh parse with
the hash of the stored ``Trigger`` row: a difference deletes the running watcher and starts a new one. So
the kwargs must come out the same on every parse, in every process. Asset watchers exist from Airflow 3.0.
"""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.version_compat import AIRFLOW_V_3_0_PLUS

if not AIRFLOW_V_3_0_PLUS:
    pytest.skip("asset watchers need Airflow 3.0", allow_module_level=True)

from airflow.triggers.base import BaseEventTrigger

from airflow_provider_analytics.triggers.asset_events import DataSourceSyncedEventTrigger
from airflow_provider_analytics.wire._contract import MIN_POLL_INTERVAL
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.support.names import DATA_SOURCE
from tests.support.triggers import encode_watcher_trigger, rebuilt_through_trigger_row

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "example_dags" / "analytics_on_source_sync.py"
CLASSPATH = "airflow_provider_analytics.triggers.asset_events.DataSourceSyncedEventTrigger"

WATCHERS = [
    pytest.param(DataSourceSyncedEventTrigger(data_source_id=DATA_SOURCE), id="defaults"),
    pytest.param(
        DataSourceSyncedEventTrigger(data_source_id="ds_ads", analytics_conn_id="analytics_eu", poll_interval=2.5),
        id="conn-interval",
    ),
    pytest.param(DataSourceSyncedEventTrigger(data_source_id=DATA_SOURCE, poll_interval=30), id="int-interval"),
]


def example_watcher() -> BaseEventTrigger:
    """The example DAG file's watcher trigger, from a fresh execution of the file (a new parse)."""
    namespace = runpy.run_path(str(EXAMPLE))
    [watcher] = namespace["warehouse_synced"].watchers
    return watcher.trigger  # type: ignore[no-any-return]


@pytest.mark.parametrize("trigger", WATCHERS)
def test_kwargs_are_plain_json_in_a_fixed_order(trigger: DataSourceSyncedEventTrigger) -> None:
    classpath, kwargs = trigger.serialize()
    assert classpath == CLASSPATH
    assert list(kwargs) == ["data_source_id", "analytics_conn_id", "poll_interval"]
    assert json.loads(json.dumps(kwargs)) == kwargs
    assert isinstance(kwargs["poll_interval"], float)  # 30 and 30.0 would encode differently


@pytest.mark.parametrize("trigger", WATCHERS)
def test_round_trips_through_airflow_serde_and_the_trigger_row(trigger: DataSourceSyncedEventTrigger) -> None:
    rebuilt = rebuilt_through_trigger_row(trigger)
    assert rebuilt.shared_stream_key() == trigger.shared_stream_key()


def test_the_hash_is_the_same_on_every_parse_and_matches_the_stored_row() -> None:
    from airflow.models.trigger import Trigger

    first, second = example_watcher(), example_watcher()
    assert first is not second
    hashes = {BaseEventTrigger.hash(**encode_watcher_trigger(trigger)) for trigger in (first, second)}
    assert len(hashes) == 1

    # The DAG processor's second look: the row stored after the first parse, decrypted, hashed again.
    encoded = encode_watcher_trigger(first)
    row = Trigger(classpath=encoded["classpath"], kwargs=encoded["kwargs"])
    assert BaseEventTrigger.hash(row.classpath, row.kwargs) in hashes


def test_the_hashed_form_is_the_same_in_every_process() -> None:
    """``hash()`` of a string is salted per process, so compare what is hashed: the normalised kwargs."""
    script = textwrap.dedent(
        """
        import json, runpy, sys
        from airflow.serialization.serialized_objects import BaseSerialization
        from tests.support.triggers import encode_watcher_trigger

        [watcher] = runpy.run_path(sys.argv[1])["warehouse_synced"].watchers
        encoded = encode_watcher_trigger(watcher.trigger)
        again = encode_watcher_trigger({"classpath": encoded["classpath"], "kwargs": encoded["kwargs"]})
        normalized = again["kwargs"]
        print(encoded["classpath"], json.dumps(BaseSerialization.serialize(normalized)))
        """
    )

    def hashed_form() -> str:
        done = subprocess.run(
            [sys.executable, "-c", script, str(EXAMPLE)],
            cwd=ROOT,  # so that ``tests.support`` imports
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return done.stdout.strip().splitlines()[-1]

    first, second = hashed_form(), hashed_form()
    assert first == second
    assert first.startswith(CLASSPATH + " ")
    assert '"data_source_id": "ds_warehouse"' in first


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"data_source_id": ""}, "data_source_id must be a platform id"),
        ({"data_source_id": "ds warehouse"}, "data_source_id must be a platform id"),
        ({"data_source_id": None}, "data_source_id must be a platform id"),
        ({"data_source_id": DATA_SOURCE, "analytics_conn_id": ""}, "analytics_conn_id must be a connection id"),
        ({"data_source_id": DATA_SOURCE, "poll_interval": "60"}, "poll_interval must be a number of seconds"),
        ({"data_source_id": DATA_SOURCE, "poll_interval": True}, "poll_interval must be a number of seconds"),
    ],
)
def test_bad_arguments_fail_at_parse_time_saying_what_to_change(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(AnalyticsInputError, match=message):
        DataSourceSyncedEventTrigger(**kwargs)


def test_a_tiny_poll_interval_is_raised_to_the_floor() -> None:
    trigger = DataSourceSyncedEventTrigger(data_source_id=DATA_SOURCE, poll_interval=0)
    assert trigger.poll_interval == MIN_POLL_INTERVAL
    assert trigger.serialize()[1]["poll_interval"] == MIN_POLL_INTERVAL


def test_the_asset_watcher_accepts_it() -> None:
    """``AssetWatcher`` refuses triggers that are not ``BaseEventTrigger``s; this one is."""
    from airflow.sdk import Asset, AssetWatcher

    trigger = DataSourceSyncedEventTrigger(data_source_id=DATA_SOURCE)
    asset = Asset("synced", watchers=[AssetWatcher(name="synced_watcher", trigger=trigger)])
    assert asset.watchers[0].trigger is trigger
