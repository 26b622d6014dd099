"""Names a release had stay importable for a while, each with a warning that names its replacement."""

from __future__ import annotations

import importlib

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsAsyncHook, AnalyticsHook
from airflow_provider_analytics.hooks.base import AnalyticsBaseHook


def test_the_old_base_hook_name_imports_with_a_warning_naming_the_new_one() -> None:
    with pytest.warns(DeprecationWarning, match=r"AnalyticsConnection from \S+\.hooks\.base is deprecated") as caught:
        from airflow_provider_analytics.hooks.base import AnalyticsConnection  # type: ignore[attr-defined]  # run time only
    assert AnalyticsConnection is AnalyticsBaseHook
    [warning] = caught.list
    assert "import it from airflow_provider_analytics.hooks.base (as AnalyticsBaseHook)" in str(warning.message)
    assert warning.filename == __file__  # it points at the line to change, not into the provider


def test_code_written_for_the_old_name_keeps_working() -> None:
    base = importlib.import_module("airflow_provider_analytics.hooks.base")
    with pytest.warns(DeprecationWarning, match=r"\(as AnalyticsBaseHook\)"):
        old = base.AnalyticsConnection
    assert issubclass(AnalyticsHook, old)
    assert issubclass(AnalyticsAsyncHook, old)


def test_other_missing_names_still_fail_to_import() -> None:
    with pytest.raises(ImportError, match="NoSuchHook"):
        from airflow_provider_analytics.hooks.base import NoSuchHook  # type: ignore[attr-defined]  # noqa: F401
