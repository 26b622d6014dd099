"""The operators' failures have one home, ``operators.errors``; the modules that re-exported them still answer
for a release, each lookup with a warning that names the home."""

from __future__ import annotations

import importlib

import pytest

from airflow_provider_analytics.operators import errors

MOVED = ["RemoteJobFailed", "RemoteJobTimeout", "RemoteWaitError", "RequestChangedBetweenTries"]
OLD_HOMES = ["airflow_provider_analytics.operators.jobs", "airflow_provider_analytics.operators.waiting"]


@pytest.mark.parametrize("old_home", OLD_HOMES)
@pytest.mark.parametrize(
    "name", ["RemoteJobFailed", "RemoteJobTimeout", "RemoteWaitError", "RequestChangedBetweenTries"]
)
def test_an_old_import_path_warns_and_gives_the_same_class(old_home: str, name: str) -> None:
    module = importlib.import_module(old_home)
    with pytest.warns(DeprecationWarning, match=f"import it from {errors.__name__}") as caught:
        moved = getattr(module, name)
    assert moved is getattr(errors, name)
    [warning] = caught.list
    assert f"importing {name} from {old_home} is deprecated" in str(warning.message)
    assert warning.filename == __file__  # it points at the line to change, not into the provider


def test_from_import_of_an_old_path_warns_too() -> None:
    with pytest.warns(DeprecationWarning, match="RemoteJobFailed from airflow_provider_analytics.operators.jobs"):
        from airflow_provider_analytics.operators.jobs import RemoteJobFailed
    assert RemoteJobFailed is errors.RemoteJobFailed


@pytest.mark.parametrize("old_home", OLD_HOMES)
def test_the_old_homes_no_longer_list_them(old_home: str) -> None:
    module = importlib.import_module(old_home)
    assert not set(module.__all__) & set(errors.__all__)
    with pytest.raises(AttributeError, match="NoSuchError"):
        module.NoSuchError  # noqa: B018
