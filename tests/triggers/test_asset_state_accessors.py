"""``version_compat.asset_state_accessors``: the one place the provider reads Airflow internals.

Airflow 3.3's ``AssetStateStoreAccessors`` offers no public way to list the assets it holds, so the accessor
of each asset of a shared event trigger is read from its ``_by_name`` and ``_by_uri`` (docs/events.md). These
tests fail loudly on an Airflow whose store has another shape, and when the ``apache-airflow`` bound moves
past the releases they were checked on.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from airflow_provider_analytics.version_compat import (
    AIRFLOW_V_3_3_PLUS,
    ASSET_STATE_STORE_INTERNALS,
    asset_state_accessors,
)

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
NEEDS_STATE_STORE = pytest.mark.skipif(not AIRFLOW_V_3_3_PLUS, reason="asset_state_store is Airflow 3.3's")
# The newest Airflow whose AssetStateStoreAccessors was read for this: raise it only after reading the new one.
CHECKED_BELOW = Version("3.4")


def _store(*names: str) -> object:
    from airflow.sdk import Asset
    from airflow.sdk.execution_time.context import AssetStateStoreAccessors

    # As the triggerer builds it for a watcher (triggerer_job_runner: one Asset per watched asset).
    return AssetStateStoreAccessors(inlets=[Asset(name=name, uri=f"s3://bucket/{name}") for name in names])


def test_no_store_has_no_accessors() -> None:
    assert asset_state_accessors(None) == []


@NEEDS_STATE_STORE
def test_the_running_airflow_keeps_the_accessors_where_the_provider_reads_them() -> None:
    store = _store("asset_a", "asset_b")
    for name in ASSET_STATE_STORE_INTERNALS:
        assert isinstance(getattr(store, name, None), dict), (
            f"Airflow's AssetStateStoreAccessors has no dict {name!r} any more: a watcher of several assets "
            "cannot keep a watermark for each. Find the new way in airflow/sdk/execution_time/context.py and "
            "change version_compat.asset_state_accessors"
        )


@NEEDS_STATE_STORE
def test_each_asset_of_a_shared_trigger_gets_its_own_accessor() -> None:
    from airflow.sdk import Asset

    store = _store("asset_a", "asset_b")
    accessors = asset_state_accessors(store)
    # Compared with what Airflow's public subscript gives for each asset.
    assert accessors == [store[Asset(name="asset_a")], store[Asset(name="asset_b")]]  # type: ignore[index]


@NEEDS_STATE_STORE
def test_a_single_asset_uses_the_store_itself() -> None:
    store = _store("asset_a")
    assert asset_state_accessors(store) == [store]


def test_the_airflow_bound_stops_before_an_unread_release() -> None:
    """A new Airflow minor release may move the store's internals: the bound is raised only after a check."""
    dependencies = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"]
    airflow = next(Requirement(line) for line in dependencies if Requirement(line).name == "apache-airflow")
    assert not airflow.specifier.contains(CHECKED_BELOW, prereleases=True), (
        f"pyproject.toml allows {airflow}: read the new Airflow's AssetStateStoreAccessors, rerun these tests on "
        "it, then raise CHECKED_BELOW here"
    )
    assert airflow.specifier.contains("3.3.2")  # the release these tests were written against
