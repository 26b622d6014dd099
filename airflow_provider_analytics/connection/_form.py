"""The connection form for Airflow releases before 3.2, generated from the provider info's declarative one.

Airflow 3.2 and later read the form from the provider info (``conn-fields`` and ``ui-field-behaviour``).
Airflow 2.11, 3.0 and 3.1 ask the hook class instead, through ``get_connection_form_widgets()`` and
``get_ui_field_behaviour()`` defined in its own ``__dict__``. Both come from :mod:`..provider_info` here, so
the form has the same fields, labels, descriptions, defaults, placeholders and hidden fields everywhere.

Where the fields appear: Airflow 2.11's web UI renders the wtforms fields (FAB and wtforms come with it).
Airflow 3.0 and 3.1's UI asks the API server (``HookMetaService``), which swaps in its own stand-ins for
the wtforms field classes: 3.1 also stands in for wtforms and Flask-AppBuilder when they are not installed,
3.0 only when wtforms is importable (it comes with the FAB provider, or ``pip install wtforms``); without it,
3.0's form shows the standard fields only, unrelabelled. wtforms and Flask-AppBuilder are imported only
inside :func:`connection_form_widgets`, when Airflow asks.
"""

from __future__ import annotations

import importlib
from typing import Any

from airflow_provider_analytics.provider_info import get_provider_info

# Airflow accepts only these wtforms field classes on a hook's form.
_TEXT, _INTEGER, _BOOLEAN, _PASSWORD = "StringField", "IntegerField", "BooleanField", "PasswordField"


def connection_type_info(conn_type: str) -> dict[str, Any]:
    """The provider info's entry for one connection type.

    :param conn_type: e.g. ``analytics``.
    :raises LookupError: when the provider info does not declare it.
    """
    for entry in get_provider_info()["connection-types"]:
        if entry["connection-type"] == conn_type:
            found: dict[str, Any] = entry
            return found
    raise LookupError(f"the provider info declares no connection type {conn_type!r}")


def field_class_name(schema: dict[str, Any]) -> str:
    """The wtforms field class for a ``conn-fields`` JSON schema.

    A secret is a password field; a field that only takes a boolean is a check box, one that only takes a
    whole number an integer field; anything else (a number with a fraction, ``true``/``false`` or a path)
    is text, which the hook parses as it parses every extra given as a string.

    :param schema: the field's ``schema``.
    """
    if schema.get("format") == "password":
        return _PASSWORD
    types = schema.get("type", "string")
    kinds = {types} if isinstance(types, str) else set(types)
    kinds.discard("null")
    if kinds == {"boolean"}:
        return _BOOLEAN
    if kinds == {"integer"}:
        return _INTEGER
    return _TEXT


def field_behaviour(conn_type: str) -> dict[str, Any]:
    """``ui-field-behaviour`` in the shape ``get_ui_field_behaviour()`` returns (snake_case keys).

    :param conn_type: the connection type.
    """
    behaviour = connection_type_info(conn_type).get("ui-field-behaviour", {})
    return {
        "hidden_fields": list(behaviour.get("hidden-fields", [])),
        "relabeling": dict(behaviour.get("relabeling", {})),
        "placeholders": dict(behaviour.get("placeholders", {})),
    }


def connection_form_widgets(conn_type: str) -> dict[str, Any]:
    """``conn-fields`` as the wtforms fields ``get_connection_form_widgets()`` returns, keyed by extra name.

    Every field is optional (an empty one means the hook's default), and shows the declared label,
    description and default.

    :param conn_type: the connection type.
    """
    # Airflow's UI libraries, not the provider's dependencies: looked up by name when Airflow asks for the form.
    wtforms = importlib.import_module("wtforms")
    optional = importlib.import_module("wtforms.validators").Optional
    text_widget: Any = None
    password_widget: Any = None
    try:  # Flask-AppBuilder's Bootstrap widgets where its UI renders the form (Airflow 2.11)
        fieldwidgets = importlib.import_module("flask_appbuilder.fieldwidgets")
        text_widget, password_widget = fieldwidgets.BS3TextFieldWidget, fieldwidgets.BS3PasswordFieldWidget
    except ImportError:  # Airflow 3.0 with wtforms alone: the API server reads the fields, not the widgets
        pass

    widgets: dict[str, Any] = {}
    for name, definition in connection_type_info(conn_type).get("conn-fields", {}).items():
        schema = definition.get("schema", {})
        kind = field_class_name(schema)
        field_class = getattr(wtforms, kind)
        # Only arguments that both wtforms and Airflow 3.0/3.1's stand-ins for it take.
        settings: dict[str, Any] = {
            "label": definition["label"],
            "description": definition.get("description", ""),
            "validators": [optional()],
            "default": schema.get("default"),
        }
        widget = password_widget if kind == _PASSWORD else text_widget
        if widget is not None and kind != _BOOLEAN:  # a check box keeps wtforms' own widget
            settings["widget"] = widget()
        widgets[name] = field_class(**settings)
    return widgets
