"""Names that moved keep answering at their old paths until 2.0.0, each lookup with a warning naming the new home.

One table for every move since 1.0.0: the operators' failures (to ``operators.errors``), the event contract (to
the internal ``_jobs/events.py``; ``UnexpectedEventError`` to ``operators.errors``), download destinations (to
``destinations/``) and the connection's parsing (to ``connection/``).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import airflow_provider_analytics
import airflow_provider_analytics.destinations as destinations
from airflow_provider_analytics._jobs import base, events
from airflow_provider_analytics.connection import _config, _notes
from airflow_provider_analytics.destinations import _atomic, _download, _target
from airflow_provider_analytics.operators import errors
from airflow_provider_analytics.wire import outcomes

PACKAGE = Path(airflow_provider_analytics.__file__).parent
P = "airflow_provider_analytics."
FAILURES = ("RemoteJobFailed", "RemoteJobTimeout", "RemoteWaitError", "RequestChangedBetweenTries")
# old module -> {old name: the object it gives now}
MOVED: dict[str, dict[str, object]] = {
    **{P + old: {name: getattr(errors, name) for name in FAILURES} for old in ("operators.jobs", "operators.waiting")},
    P + "triggers.wait_events": {
        "UnexpectedEventError": errors.UnexpectedEventError,
        **{name: getattr(events, name) for name in events.__all__},
        "Outcome": outcomes.Outcome,
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


@pytest.mark.parametrize("old_home", sorted(MOVED))
def test_other_names_of_an_old_home_fail_as_before_and_it_lists_none(old_home: str) -> None:
    module = importlib.import_module(old_home)
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018
    assert not set(getattr(module, "__all__", [])) & set(MOVED[old_home])


def test_nothing_in_the_package_imports_through_an_old_path() -> None:
    # pytest turns warnings into errors, so a shim the package used would fail whatever imported it; this names it.
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in MOVED:
                used = {alias.name for alias in node.names} & set(MOVED[node.module])
                found += [f"{path.relative_to(PACKAGE)}:{node.lineno}: {name}" for name in sorted(used)]
    assert found == []


def test_each_moved_exception_has_one_public_home() -> None:
    assert errors.UnexpectedEventError.__module__ == errors.__name__
    assert "UnexpectedEventError" in errors.__all__
    assert "UnexpectedEventError" not in events.__all__  # the check raises it, but does not export it


def test_the_new_packages_export_only_what_is_public() -> None:
    assert destinations.__all__ == ["DownloadResult"]
    assert importlib.import_module(P + "connection").__all__ == []  # the hook is the way in
