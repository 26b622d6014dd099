"""Names that moved keep answering at their old paths until 2.0.0, each lookup with a warning naming the new home.

One table for every move since 1.0.0: the operators' failures (to ``operators.errors``), the event contract (to
the internal ``_jobs/events.py``; ``UnexpectedEventError`` to ``operators.errors``), download destinations (to
``destinations/``), the connection's parsing (to ``connection/``), and the modules of 1.0.0 that became internal
(``wire/endpoints.py`` is ``wire/_endpoints.py``, ...): the old module forwards every name of the new one.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import airflow_provider_analytics
import airflow_provider_analytics.destinations as destinations
from airflow_provider_analytics._jobs import base, events
from airflow_provider_analytics.connection import _config, _notes
from airflow_provider_analytics.destinations import _atomic, _download, _target
from airflow_provider_analytics.lineage import _extract, _facets, _recording
from airflow_provider_analytics.operators import _common, errors
from airflow_provider_analytics.triggers import _polling
from airflow_provider_analytics.wire import (
    _bodies,
    _calls,
    _contract,
    _core,
    _deadline,
    _endpoints,
    _models,
    _outcomes,
    _pagination,
    _tls,
)
from airflow_provider_analytics.wire import _download as _wire_download

PACKAGE = Path(airflow_provider_analytics.__file__).parent
P = "airflow_provider_analytics."
FAILURES = ("RemoteJobFailed", "RemoteJobTimeout", "RemoteWaitError", "RequestChangedBetweenTries")
# old module -> {old name: the object it gives now}
MOVED: dict[str, dict[str, object]] = {
    **{P + old: {name: getattr(errors, name) for name in FAILURES} for old in ("operators.jobs", "operators.waiting")},
    P + "triggers.wait_events": {
        "UnexpectedEventError": errors.UnexpectedEventError,
        **{name: getattr(events, name) for name in events.__all__},
        "Outcome": _outcomes.Outcome,
        "WaitKind": base.JobKind,
    },
    P + "hooks.destinations": {
        "DownloadResult": destinations.DownloadResult,
        "Destination": _target.Destination,
        "refuse_existing": _target.refuse_existing,
        "write_atomically": _atomic.write_atomically,
        "download_report_to": _download.download_report_to,
    },
    P + "hooks.connection": {
        "client_config_from_connection": _config.client_config_from_connection,
        "base_url_of": _config.base_url_of,
        "ui_url_of": _config.ui_url_of,
        "known_extras": _notes.known_extras,
        "redact": _notes.redact,
    },
    P + "hooks.base": {
        "masked_config": _config.masked_config,
        "prepared_config": _config.prepared_config,
        "quiet_httpx_request_lines": _config.quiet_httpx_request_lines,
    },
}
# Modules of 1.0.0 that became internal: old module -> the module it is now (every name forwarded).
MOVED_MODULES = {
    P + old: new
    for old, new in {
        "wire.bodies": _bodies,
        "wire.calls": _calls,
        "wire.contract": _contract,
        "wire.core": _core,
        "wire.deadline": _deadline,
        "wire.download": _wire_download,
        "wire.endpoints": _endpoints,
        "wire.models": _models,
        "wire.outcomes": _outcomes,
        "wire.pagination": _pagination,
        "wire.tls": _tls,
        "lineage.extract": _extract,
        "lineage.facets": _facets,
        "lineage.recording": _recording,
        "triggers.polling": _polling,
        "operators.common": _common,
    }.items()
}
# One representative name each in the table: the test below goes through every name of every such module.
REPRESENTATIVE = {
    "wire.bodies": "loads_json",
    "wire.calls": "Call",
    "wire.contract": "MIN_POLL_INTERVAL",
    "wire.core": "BaseAnalyticsClient",
    "wire.deadline": "call_deadline",
    "wire.download": "safe_filename",
    "wire.endpoints": "get_report",
    "wire.models": "LayoutItem",
    "wire.outcomes": "Outcome",
    "wire.pagination": "SyncPager",
    "wire.tls": "tls_context",
    "lineage.extract": "task_lineage",
    "lineage.facets": "AnalyticsRunFacet",
    "lineage.recording": "keep",
    "triggers.polling": "PlatformPoller",
    "operators.common": "task_step",
}
MOVED.update({P + old: {name: getattr(MOVED_MODULES[P + old], name)} for old, name in REPRESENTATIVE.items()})
CASES = [(old, name, now) for old, names in MOVED.items() for name, now in names.items()]


@pytest.mark.parametrize(("old_home", "name", "now"), CASES, ids=[f"{o.removeprefix(P)}:{n}" for o, n, _ in CASES])
def test_an_old_path_warns_names_the_new_home_and_gives_the_same_object(old_home: str, name: str, now: object) -> None:
    module = importlib.import_module(old_home)
    with pytest.warns(DeprecationWarning, match=f"importing {name} from {old_home} is deprecated") as caught:
        moved = getattr(module, name)
    assert moved is now
    [warning] = caught.list
    text = str(warning.message)
    assert f"importing {name} from {old_home} is deprecated and stops working in 2.0.0; import it from " in text
    home = text.rsplit("import it from ", 1)[1].split(" ")[0]
    new_name = text.rsplit("(as ", 1)[1].rstrip(")") if "(as " in text else name
    assert getattr(importlib.import_module(home), new_name) is now  # the message names where it really is
    assert warning.filename == __file__  # it points at the line to change, not into the provider


def test_a_from_import_warns_too() -> None:
    with pytest.warns(DeprecationWarning, match=r"WaitKind from .*wait_events .*_jobs\.base \(as JobKind\)"):
        from airflow_provider_analytics.triggers.wait_events import WaitKind
    assert WaitKind is base.JobKind


@pytest.mark.parametrize("old_home", sorted(MOVED_MODULES))
def test_a_moved_module_forwards_every_name_of_the_new_one(old_home: str) -> None:
    old, new = importlib.import_module(old_home), MOVED_MODULES[old_home]
    assert (ast.get_docstring(ast.parse(Path(old.__file__ or "").read_text())) or "").startswith(
        f"Moved to ``{new.__name__}``"
    )
    # (pytest rewrites the asserts of its plugins' distribution, this one too: "@py_builtins" is not a name)
    names = [name for name in vars(new) if name.isidentifier() and not (name.startswith("__") and name.endswith("__"))]
    assert names
    for name in names:
        with pytest.warns(DeprecationWarning, match=f"import it from {re.escape(new.__name__)}$") as caught:
            forwarded = getattr(old, name)
        assert forwarded is vars(new)[name], name
        assert [warning.filename for warning in caught.list] == [__file__]
    assert not hasattr(old, "__path__")  # a dunder is the old module's own: an import does not take it for a package


def test_a_from_import_of_a_moved_module_points_at_the_importing_line() -> None:
    with pytest.warns(DeprecationWarning, match=r"get_report from .*wire\.endpoints .*wire\._endpoints$") as caught:
        from airflow_provider_analytics.wire.endpoints import get_report
    assert get_report is _endpoints.get_report
    assert [warning.filename for warning in caught.list] == [__file__]


@pytest.mark.parametrize("old_home", sorted(MOVED))
def test_other_names_of_an_old_home_fail_as_before_and_it_lists_none(old_home: str) -> None:
    module = importlib.import_module(old_home)
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018
    assert not set(getattr(module, "__all__", [])) & set(MOVED[old_home])


def _old_paths_imported(root: Path) -> list[str]:
    """``file:line: name`` for each import under ``root`` of a moved name, or of or from a moved module."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                used = {alias.name for alias in node.names} & set(MOVED_MODULES)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = {alias.name for alias in node.names}
                used = {f"{node.module}.{name}" for name in names} & set(MOVED_MODULES)  # from wire import core
                if node.module in MOVED_MODULES:
                    used |= names
                elif node.module in MOVED:
                    used |= names & set(MOVED[node.module])
            else:
                continue
            found += [f"{path.relative_to(root)}:{node.lineno}: {name}" for name in sorted(used)]
    return found


def test_the_scan_finds_each_way_of_importing_an_old_path(tmp_path: Path) -> None:
    (tmp_path / "dag.py").write_text(
        "from airflow_provider_analytics.wire import core, errors\n"
        "from airflow_provider_analytics.wire.endpoints import get_report\n"
        "import airflow_provider_analytics.lineage.facets\n"
        "from airflow_provider_analytics.operators.jobs import RemoteJobFailed, RemoteJobOperator\n"
        "from airflow_provider_analytics.wire._endpoints import get_execution\n"
    )
    assert _old_paths_imported(tmp_path) == [
        f"dag.py:1: {P}wire.core",
        "dag.py:2: get_report",
        f"dag.py:3: {P}lineage.facets",
        "dag.py:4: RemoteJobFailed",
    ]


def test_nothing_in_the_package_imports_through_an_old_path() -> None:
    # pytest turns warnings into errors, so a shim the package used would fail whatever imported it; this names it.
    assert _old_paths_imported(PACKAGE) == []


@pytest.mark.parametrize("folder", ["tests", "bench", "tools", "example_dags", "docs"])
def test_nothing_else_in_the_repository_imports_through_an_old_path(folder: str) -> None:
    found = _old_paths_imported(PACKAGE.parent / folder)
    assert [line for line in found if not line.startswith("test_moved_names.py:")] == []


def test_each_moved_exception_has_one_public_home() -> None:
    assert errors.UnexpectedEventError.__module__ == errors.__name__
    assert "UnexpectedEventError" in errors.__all__
    assert "UnexpectedEventError" not in events.__all__  # the check raises it, but does not export it


def test_the_new_packages_export_only_what_is_public() -> None:
    assert destinations.__all__ == ["DownloadResult"]
    assert importlib.import_module(P + "connection").__all__ == []  # the hook is the way in
