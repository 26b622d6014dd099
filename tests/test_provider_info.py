"""The provider metadata that Airflow's providers manager reads: valid against both of Airflow's schemas."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.resources
import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from airflow_provider_analytics.provider_info import get_provider_info
from tests.support.names import DISTRIBUTION
from tests.support.probes import run_without_connection

# The connection form's standard fields (airflow.api_fastapi ... HookMetaService._make_standard_fields, plus extra).
STANDARD_FIELDS = {"description", "host", "port", "login", "password", "schema", "extra"}


def _schema(name: str) -> dict[str, Any]:
    return json.loads((importlib.resources.files("airflow") / name).read_text())


def _validate(schema_name: str, document: dict[str, Any]) -> list[str]:
    schema = _schema(schema_name)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema)
    return [f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(document)]


def _connection_types() -> list[dict[str, Any]]:
    types = get_provider_info()["connection-types"]
    assert types, "the provider registers no connection type"
    return types


@pytest.mark.parametrize("schema_name", ["provider_info.schema.json", "provider.yaml.schema.json"])
def test_provider_info_is_valid_against_airflow_schema(schema_name: str) -> None:
    assert _validate(schema_name, get_provider_info()) == []


def test_a_broken_provider_info_is_caught_by_the_schema() -> None:
    # Guards the check above: the schema does reject a malformed document.
    broken = get_provider_info()
    broken["connection-types"][0]["conn-fields"]["timeout"].pop("label")
    broken["connection-types"][0]["ui-field-behaviour"]["hidden-fields"].append("token")
    errors = _validate("provider.yaml.schema.json", broken)
    assert any("'label' is a required property" in error for error in errors), errors
    assert any("'token' is not one of" in error for error in errors), errors


def test_package_name_is_the_distribution_name() -> None:
    info = get_provider_info()
    assert info["package-name"] == DISTRIBUTION
    assert importlib.metadata.distribution(DISTRIBUTION).metadata["Name"] == DISTRIBUTION
    assert importlib.metadata.version(DISTRIBUTION) in info["versions"]


def test_entry_point_points_at_get_provider_info() -> None:
    points = importlib.metadata.entry_points(group="apache_airflow_provider")
    ours = [point for point in points if point.dist is not None and point.dist.name == DISTRIBUTION]
    assert len(ours) == 1
    assert ours[0].load() is get_provider_info


def test_every_conn_field_has_a_label_and_a_typed_valid_schema() -> None:
    for connection_type in _connection_types():
        fields = connection_type.get("conn-fields", {})
        assert fields, f"{connection_type['connection-type']} declares no conn-fields"
        for name, definition in fields.items():
            assert isinstance(definition.get("label"), str), f"{name}: no label"
            assert definition["label"].strip(), f"{name}: empty label"
            schema = definition.get("schema")
            assert isinstance(schema, dict), f"{name}: no schema"
            assert schema.get("type"), f"{name}: schema has no type"
            jsonschema.Draft7Validator.check_schema(schema)
            if "default" in schema:
                jsonschema.Draft7Validator(schema).validate(schema["default"])


def test_hidden_relabeled_and_placeholder_fields_are_standard_fields() -> None:
    for connection_type in _connection_types():
        behaviour = connection_type.get("ui-field-behaviour", {})
        hidden = behaviour.get("hidden-fields", [])
        assert set(hidden) <= STANDARD_FIELDS, set(hidden) - STANDARD_FIELDS
        # The token and the base URL must stay visible.
        assert "password" not in hidden
        assert "host" not in hidden
        assert set(behaviour.get("relabeling", {})) <= STANDARD_FIELDS - set(hidden)


def test_hook_class_imports_and_matches_the_connection_type() -> None:
    for connection_type in _connection_types():
        module_name, _, class_name = connection_type["hook-class-name"].rpartition(".")
        hook_class = getattr(importlib.import_module(module_name), class_name)
        assert hook_class.conn_type == connection_type["connection-type"]
        assert hook_class.hook_name == connection_type.get("hook-name", hook_class.hook_name)
        assert hook_class.default_conn_name == "analytics_default"
    info = get_provider_info()
    for hook in info.get("hooks", []):
        for module in hook["python-modules"]:
            importlib.import_module(module)


def test_airflow_cli_lists_the_provider() -> None:
    airflow = Path(sys.executable).with_name("airflow")
    assert airflow.exists(), airflow
    # The session's AIRFLOW_HOME (tests/conftest.py), without the sandbox connection.
    result = run_without_connection([str(airflow), "providers", "get", DISTRIBUTION, "--full", "-o", "json"])
    # Airflow may log a line to stdout before the JSON document.
    document = next(line for line in result.stdout.splitlines() if line.startswith("[{"))
    listed = json.loads(document)
    assert [entry["package-name"] for entry in listed] == [DISTRIBUTION]
    assert listed[0]["connection-types"][0]["connection-type"] == "analytics"
    assert "Traceback" not in result.stderr
