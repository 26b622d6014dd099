"""The connection form Airflow itself builds for ``analytics`` has the provider info's fields on every release.

Airflow 3.2+ reads the form from the provider info; 2.11, 3.0 and 3.1 from ``AnalyticsHook``'s
``get_connection_form_widgets()`` / ``get_ui_field_behaviour()``, generated from that same provider info
(connection/_form.py). Each release is asked the way its UI asks: Airflow 2.11's web server reads
``ProvidersManager`` (with the wtforms fields it ships); Airflow 3's UI reads the API server's
``HookMetaService.hook_meta_data()``, which runs ``ProvidersManager`` with its own wtforms stand-ins. That call
leaves stand-in modules in ``sys.modules``, so every probe runs in a fresh interpreter.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
from typing import Any

import pytest

from airflow_provider_analytics.connection._form import connection_type_info, field_behaviour, field_class_name
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.version_compat import AIRFLOW_V_3_0_PLUS, AIRFLOW_V_3_1_PLUS
from tests.support.probes import RESULT_PREFIX, printed_result, run_without_connection
from tests.support.releases import DECLARATIVE_CONNECTION_FORM

_PROBE = textwrap.dedent(
    """
    import json, sys, warnings
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        if sys.argv[1] == "api":  # Airflow 3: what the UI's connection form is built from
            from airflow.api_fastapi.core_api.services.ui.connections import HookMetaService

            (meta,) = [m for m in HookMetaService.hook_meta_data() if m.connection_type == "analytics"]
            meta = meta.model_dump()
            standard = {k: v for k, v in (meta["standard_fields"] or {}).items() if v}
            form = {
                "hook": meta["hook_class_name"],
                "fields": {
                    name: {"label": field["schema"].get("title"), "description": field.get("description")}
                    for name, field in (meta["extra_fields"] or {}).items()
                },
                "kinds": {name: field["schema"].get("type") for name, field in (meta["extra_fields"] or {}).items()},
                "hidden": sorted(
                    "schema" if name == "url_schema" else name for name, f in standard.items() if f["hidden"]
                ),
                "relabeling": {n: f["title"] for n, f in standard.items() if f["title"]},
                "placeholders": {n: f["placeholder"] for n, f in standard.items() if f["placeholder"]},
            }
        else:  # Airflow 2.11: the web server's form reads the providers manager directly
            from airflow.providers_manager import ProvidersManager

            manager = ProvidersManager()
            hook = manager.hooks["analytics"]
            prefix = "extra__analytics__"
            widgets = {
                key[len(prefix):]: info.field
                for key, info in manager.connection_form_widgets.items()
                if key.startswith(prefix)
            }
            behaviour = manager.field_behaviours.get("analytics", {})
            form = {
                "hook": hook.hook_class_name,
                "fields": {
                    name: {"label": str(f.kwargs["label"]), "description": f.kwargs.get("description")}
                    for name, f in widgets.items()
                },
                "kinds": {name: f.field_class.__name__ for name, f in widgets.items()},
                "hidden": sorted(behaviour.get("hidden_fields", [])),
                "relabeling": behaviour.get("relabeling", {}),
                "placeholders": behaviour.get("placeholders", {}),
            }
    form["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught if "nalytics" in str(w.message)]
    print("RESULT " + json.dumps(form))
    """
)

CONN_TYPE = "analytics"
# Airflow 3.0's API server swaps in its wtforms stand-ins only when wtforms imports (the FAB provider or
# `pip install wtforms` brings it); 3.1 stands in for a missing wtforms too, and 2.11 ships it.
NEEDS_WTFORMS = AIRFLOW_V_3_0_PLUS and not AIRFLOW_V_3_1_PLUS
HAS_WTFORMS = importlib.util.find_spec("wtforms") is not None


def _form_airflow_shows() -> dict[str, Any]:
    completed = run_without_connection([sys.executable, "-c", _PROBE, "api" if AIRFLOW_V_3_0_PLUS else "manager"])
    assert RESULT_PREFIX in completed.stdout, completed.stderr
    shown: dict[str, Any] = printed_result(completed.stdout)
    return shown


@pytest.fixture(scope="module")
def shown() -> dict[str, Any]:
    if NEEDS_WTFORMS and not HAS_WTFORMS:
        pytest.skip("the connection form's extra fields need wtforms on Airflow 3.0 (the FAB provider brings it)")
    return _form_airflow_shows()


def test_the_form_has_every_declared_field_with_its_label_and_description(shown: dict[str, Any]) -> None:
    declared = connection_type_info(CONN_TYPE)["conn-fields"]
    assert shown["hook"] == f"{AnalyticsHook.__module__}.{AnalyticsHook.__qualname__}"
    assert shown["fields"] == {
        name: {"label": field["label"], "description": field["description"]} for name, field in declared.items()
    }


def test_the_form_hides_relabels_and_fills_placeholders_as_declared(shown: dict[str, Any]) -> None:
    declared = connection_type_info(CONN_TYPE)["ui-field-behaviour"]
    assert shown["hidden"] == sorted(declared["hidden-fields"])
    assert shown["relabeling"] == declared["relabeling"]
    assert shown["placeholders"] == declared["placeholders"]


def test_airflow_does_not_warn_about_the_hook_form(shown: dict[str, Any]) -> None:
    # 3.2+ warns about get_connection_form_widgets() unless the provider info has the form; it has.
    assert shown["warnings"] == []


def _kind_shown(schema: dict[str, Any]) -> Any:
    """What the form says a field takes: 2.11 the wtforms class; 3.0/3.1 the type of Airflow's stand-in
    for that class (always nullable); 3.2+ the declared JSON schema type itself."""
    if not AIRFLOW_V_3_0_PLUS:
        return field_class_name(schema)
    if not DECLARATIVE_CONNECTION_FORM:
        json_type = {"BooleanField": "boolean", "IntegerField": "integer"}.get(field_class_name(schema), "string")
        return [json_type, "null"]
    return schema["type"]


def test_each_field_takes_what_its_schema_allows(shown: dict[str, Any]) -> None:
    declared = connection_type_info(CONN_TYPE)["conn-fields"]
    assert shown["kinds"] == {name: _kind_shown(field["schema"]) for name, field in declared.items()}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": ["boolean", "null"]}, "BooleanField"),
        ({"type": "integer"}, "IntegerField"),
        ({"type": ["number", "null"]}, "StringField"),
        ({"type": ["boolean", "string", "null"]}, "StringField"),
        ({"type": ["string", "null"], "format": "password"}, "PasswordField"),
        ({}, "StringField"),
    ],
)
def test_field_class_follows_the_schema(schema: dict[str, Any], expected: str) -> None:
    assert field_class_name(schema) == expected


def test_hook_methods_are_on_the_registered_class_itself() -> None:
    # Airflow before 3.2 reads them only from the class's own __dict__, never from a base class.
    assert "get_connection_form_widgets" in AnalyticsHook.__dict__
    assert "get_ui_field_behaviour" in AnalyticsHook.__dict__
    assert AnalyticsHook.get_ui_field_behaviour() == field_behaviour(CONN_TYPE)
    assert json.dumps(AnalyticsHook.get_ui_field_behaviour())  # plain JSON, as Airflow validates it
