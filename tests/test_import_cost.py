"""Importing the provider stays cheap: no server stack, no sandbox, and no Airflow in the wire layer.

Each check runs in a fresh interpreter, because this test process has long since imported the sandbox.
What ``import airflow`` loads by itself is the baseline: on Airflow 3.0.6 that is FastAPI already
(``airflow.settings.initialize`` masks the config's secrets through the task SDK's ``secrets_masker``, which
imports ``task_runner`` and ``comms``, and ``comms`` does ``from fastapi import Body``), and no provider can
avoid it. The checks count what the provider's modules add on top.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap

import pytest

from tests.support.names import SERVER_STACK
from tests.support.probes import printed_result, run_without_connection

_PROBE = textwrap.dedent(
    """
    import importlib, json, sys

    def loaded(prefixes):
        return sorted(
            name for name in sys.modules
            if any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)
        )

    baseline = set(sys.modules)
    if sys.argv[2] == "after-airflow":
        import airflow  # what every DAG file and Airflow process has loaded already
        baseline = set(sys.modules)
    result = {}
    for module in sys.argv[3:]:
        importlib.import_module(module)
        result[module] = [name for name in loaded(json.loads(sys.argv[1])) if name not in baseline]
    print("RESULT " + json.dumps(result))
    """
)


def _imports(modules: list[str], watched: list[str], *, after_airflow: bool = True) -> dict[str, list[str]]:
    """For each module (imported in order, in one fresh interpreter): the watched modules loaded so far.

    :param after_airflow: count only what is loaded beyond a plain ``import airflow`` done first.
    """
    baseline = "after-airflow" if after_airflow else "from-scratch"
    completed = run_without_connection([sys.executable, "-c", _PROBE, json.dumps(watched), baseline, *modules])
    imported: dict[str, list[str]] = printed_result(completed.stdout)
    return imported


def test_probe_sees_what_an_import_loads() -> None:
    # Guards the probe itself: importing the sandbox server does show up.
    seen = _imports(
        ["airflow_provider_analytics.sandbox.server"], [*SERVER_STACK, "airflow_provider_analytics.sandbox"]
    )
    assert "airflow_provider_analytics.sandbox.server" in seen["airflow_provider_analytics.sandbox.server"]
    assert any(
        name.startswith("fastapi") or name.startswith("uvicorn")
        for name in seen["airflow_provider_analytics.sandbox.server"]
    )


def test_package_and_hook_do_not_import_the_server_stack_or_the_sandbox() -> None:
    modules = [
        "airflow_provider_analytics",
        "airflow_provider_analytics.provider_info",
        "airflow_provider_analytics.hooks.analytics",
        "airflow_provider_analytics.destinations._download",
    ]
    seen = _imports(modules, [*SERVER_STACK, "airflow_provider_analytics.sandbox"])
    assert seen == {module: [] for module in modules}


def test_wire_layer_does_not_import_airflow() -> None:
    modules = [
        "airflow_provider_analytics.wire.client",
        "airflow_provider_analytics.wire._download",
        "airflow_provider_analytics.wire._file_headers",
        "airflow_provider_analytics.wire._endpoints",
        "airflow_provider_analytics.wire.errors",
    ]
    seen = _imports(modules, ["airflow", *SERVER_STACK, "airflow_provider_analytics.sandbox"], after_airflow=False)
    assert seen == {module: [] for module in modules}


@pytest.mark.parametrize("module", ["airflow_provider_analytics.sandbox.pytest_plugin"])
def test_pytest_plugin_does_not_import_the_server_stack(module: str) -> None:
    # The plugin is registered for every pytest run where the provider is installed.
    seen = _imports([module], list(SERVER_STACK))
    assert seen == {module: []}


# What a DAG file imports, parsed at every DAG-processor pass: the hook, the operators and the sensor.
DAG_FILE_MODULES = [
    "airflow_provider_analytics.hooks.analytics",
    "airflow_provider_analytics.operators.workflows",
    "airflow_provider_analytics.operators.reports",
    "airflow_provider_analytics.operators.charts",
    "airflow_provider_analytics.operators.dashboards",
    "airflow_provider_analytics.operators.data_sources",
    "airflow_provider_analytics.operators.definitions",
    "airflow_provider_analytics.sensors.data_sources",
    "airflow_provider_analytics.sensors.workflows",
]
# Needed only once a task sends a request: the client with its transports, limiter and retry loop, the
# request builders and models, downloads and destinations, the connection's parsing and its test, the
# async hook (and common-compat's async connection lookup it brings).
SENDING_MODULES = [
    "airflow_provider_analytics.wire.client",
    "airflow_provider_analytics.wire._core",
    "airflow_provider_analytics.wire._transports",
    "airflow_provider_analytics.wire._throttle",
    "airflow_provider_analytics.wire.retry",
    "airflow_provider_analytics.wire._endpoints",
    "airflow_provider_analytics.wire._calls",
    "airflow_provider_analytics.wire._models",
    "airflow_provider_analytics.wire._pagination",
    "airflow_provider_analytics.wire._download",
    "airflow_provider_analytics.wire._file_headers",
    "airflow_provider_analytics.wire._tls",
    "airflow_provider_analytics.destinations._target",
    "airflow_provider_analytics.destinations._atomic",
    "airflow_provider_analytics.destinations._object_storage",
    "airflow_provider_analytics.destinations._download",
    "airflow_provider_analytics.connection._config",
    "airflow_provider_analytics.connection._notes",
    "airflow_provider_analytics.connection._probe",
    "airflow_provider_analytics.hooks.async_analytics",
    "airflow_provider_analytics.definitions",
    "airflow.providers.common.compat.connection",
]


def test_every_sending_module_exists() -> None:
    # Guards the check below: a renamed module left in the list would be "not imported" for ever, checking nothing.
    assert [module for module in SENDING_MODULES if importlib.util.find_spec(module) is None] == []


def test_a_dag_file_does_not_import_what_only_sending_needs() -> None:
    seen = _imports(DAG_FILE_MODULES, SENDING_MODULES)
    assert seen == {module: [] for module in DAG_FILE_MODULES}


def test_the_sending_path_is_imported_on_first_use() -> None:
    # Guards the check above: the names the hook's module and the wire package hand out lazily still resolve.
    probe = textwrap.dedent(
        """
        import json, sys
        from airflow_provider_analytics.hooks import analytics
        from airflow_provider_analytics import wire
        hook = analytics.AnalyticsHook
        names = [analytics.AnalyticsAsyncHook.__name__, wire.AnalyticsClient.__name__, wire.RetryPolicy.__name__]
        print("RESULT " + json.dumps(names))
        """
    )
    completed = run_without_connection([sys.executable, "-c", probe])
    assert printed_result(completed.stdout) == ["AnalyticsAsyncHook", "AnalyticsClient", "RetryPolicy"]


# What a DAG file with the hook, the two job operators and the sensor loads of this provider (the set `make bench`
# times next to peer providers): the classes and what their definitions need, no more. The client, its errors,
# the contract's tables, the event contract and lineage are imported when a task runs (CONTRIBUTING.md, "The
# DAG-parse path"). A module that joins this list costs every DAG file a few hundred microseconds at every parse.
PARSE_PATH_ENTRIES = [
    "airflow_provider_analytics.hooks.analytics",
    "airflow_provider_analytics.operators.workflows",
    "airflow_provider_analytics.operators.reports",
    "airflow_provider_analytics.sensors.data_sources",
]
PARSE_PATH = [
    "airflow_provider_analytics.hooks",
    "airflow_provider_analytics.hooks.analytics",
    "airflow_provider_analytics.hooks.base",
    "airflow_provider_analytics.operators",
    "airflow_provider_analytics.operators._common",
    "airflow_provider_analytics.operators.jobs",
    "airflow_provider_analytics.operators.links",
    "airflow_provider_analytics.operators.reports",
    "airflow_provider_analytics.operators.waiting",
    "airflow_provider_analytics.operators.workflows",
    "airflow_provider_analytics.sensors",
    "airflow_provider_analytics.sensors.data_sources",
]


def test_a_dag_file_loads_only_the_parse_path() -> None:
    seen = _imports(PARSE_PATH_ENTRIES, ["airflow_provider_analytics"])
    assert sorted(name for name in seen[PARSE_PATH_ENTRIES[-1]] if name != "airflow_provider_analytics") == PARSE_PATH


def test_a_dag_file_without_the_hook_loads_no_hook_module() -> None:
    # Most DAG files use operators and sensors only: they name the default connection without a hook module, and
    # so without Airflow's BaseHook, at every parse.
    entries = PARSE_PATH_ENTRIES[1:]
    seen = _imports(entries, ["airflow_provider_analytics", "airflow.sdk.bases.hook"])[entries[-1]]
    assert "airflow_provider_analytics.hooks" in seen  # the package, where DEFAULT_CONN_ID lives
    assert not [name for name in seen if name.startswith("airflow_provider_analytics.hooks.")]
    assert "airflow.sdk.bases.hook" not in seen
