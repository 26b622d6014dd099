"""The provider metadata that Airflow's providers manager reads: valid against both of the release's schemas.

Airflow validates provider info at every command, with the schema of the installed release: Airflow 2.x
knows the asset URI handlers as ``dataset-uris`` and refuses ``asset-uris`` (tests/support/releases.py).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.resources
import json
import re
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from airflow.providers.common.compat.sdk import Asset

from airflow_provider_analytics.lineage.uris import normalize_uri
from airflow_provider_analytics.provider_info import get_provider_info
from airflow_provider_analytics.version_compat import AIRFLOW_V_3_0_PLUS, AIRFLOW_V_3_1_PLUS
from tests.support.names import DISTRIBUTION
from tests.support.probes import run_without_connection
from tests.support.releases import ASSET_URIS_KEY, DECLARATIVE_CONNECTION_FORM

# The connection form's standard fields (airflow.api_fastapi ... HookMetaService._make_standard_fields, plus extra).
STANDARD_FIELDS = {"description", "host", "port", "login", "password", "schema", "extra"}


def _schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((importlib.resources.files("airflow") / name).read_text())
    return schema


def _validate(schema_name: str, document: dict[str, Any]) -> list[str]:
    schema = _schema(schema_name)
    if schema_name == "provider.yaml.schema.json" and not AIRFLOW_V_3_0_PLUS:
        # Airflow 2's provider.yaml schema also requires `dependencies`, the source file's pip requirements;
        # the provider info a provider returns at run time has none (the wheel's metadata has them).
        schema["required"] = [name for name in schema["required"] if name != "dependencies"]
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema)
    return [f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(document)]


def _connection_types() -> list[dict[str, Any]]:
    types: list[dict[str, Any]] = get_provider_info()["connection-types"]
    assert types, "the provider registers no connection type"
    return types


@pytest.mark.parametrize("schema_name", ["provider_info.schema.json", "provider.yaml.schema.json"])
def test_provider_info_is_valid_against_airflow_schema(schema_name: str) -> None:
    assert _validate(schema_name, get_provider_info()) == []


def test_a_broken_provider_info_is_caught_by_the_schema() -> None:
    # Guards the check above on every release: the schema does reject a malformed document.
    broken = get_provider_info()
    broken["connection-types"][0].pop("hook-class-name")
    broken["integrations"] = "Analytics Platform"
    errors = _validate("provider.yaml.schema.json", broken)
    assert any("'hook-class-name' is a required property" in error for error in errors), errors
    assert any("is not of type 'array'" in error for error in errors), errors


@pytest.mark.skipif(
    not DECLARATIVE_CONNECTION_FORM,
    reason="conn-fields and ui-field-behaviour are in Airflow's provider.yaml schema from 3.2 on",
)
def test_a_broken_connection_form_is_caught_by_the_schema() -> None:
    broken = get_provider_info()
    broken["connection-types"][0]["conn-fields"]["timeout"].pop("label")
    broken["connection-types"][0]["ui-field-behaviour"]["hidden-fields"].append("token")
    errors = _validate("provider.yaml.schema.json", broken)
    assert any("'label' is a required property" in error for error in errors), errors
    assert any("'token' is not one of" in error for error in errors), errors


def test_the_asset_uri_handler_is_under_the_key_this_release_reads() -> None:
    info = get_provider_info()
    other_key = "dataset-uris" if ASSET_URIS_KEY == "asset-uris" else "asset-uris"
    assert other_key not in info
    (entry,) = info[ASSET_URIS_KEY]
    assert (entry["schemes"], entry["handler"]) == (["analytics"], f"{normalize_uri.__module__}.normalize_uri")
    # Airflow itself keeps the host as written: lower-case means it called the registered handler (a
    # Dataset on Airflow 2.11).
    assert Asset("analytics://API.Example.com:8443/dashboard/db_sales/").uri == (
        "analytics://api.example.com:8443/dashboard/db_sales"
    )


# What Airflow does with the handler's ValueError: Airflow 3 refuses the Asset with the provider's message;
# Airflow 2.11 turns it into a UserWarning unless [core] strict_dataset_uri_validation is on.
BAD_URIS = [
    pytest.param("analytics://api.example.com/nope/x", "unknown analytics asset kind 'nope'", id="kind"),
    pytest.param("analytics://api.example.com/chart/a.b", "bad analytics chart id 'a.b'", id="id"),
    pytest.param("analytics://api.example.com/chart", "the path must be /<kind>/<id>", id="path"),
]


@pytest.mark.parametrize(("uri", "message"), BAD_URIS)
def test_a_bad_analytics_uri_is_refused_with_the_providers_message(
    uri: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW__CORE__STRICT_DATASET_URI_VALIDATION", "True")  # read by Airflow 2.11 only
    with pytest.raises(ValueError, match=re.escape(message)):
        Asset(uri)


@pytest.mark.skipif(AIRFLOW_V_3_0_PLUS, reason="strict_dataset_uri_validation is Airflow 2's; Airflow 3 always refuses")
@pytest.mark.parametrize(("uri", "message"), BAD_URIS)
def test_without_strict_validation_airflow_2_warns_with_the_providers_message(
    uri: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW__CORE__STRICT_DATASET_URI_VALIDATION", "False")
    with pytest.warns(UserWarning, match=re.escape(message)):
        Asset(uri)


def test_user_info_in_an_analytics_uri() -> None:
    # Airflow drops a URI's user info (with a UserWarning) before it calls the handler: always on 2.11 and
    # 3.0, and from 3.1 on when a password is there. Only a user without a password reaches the handler on
    # 3.1+, which refuses it.
    with pytest.warns(UserWarning, match="password"):
        assert Asset("analytics://u:pw@api.example.com/chart/ch_1").uri == "analytics://api.example.com/chart/ch_1"
    if AIRFLOW_V_3_1_PLUS:
        with pytest.raises(ValueError, match="carries no user or password"):
            Asset("analytics://user@api.example.com/chart/ch_1")
    else:
        with pytest.warns(UserWarning, match="auth info"):
            assert Asset("analytics://user@api.example.com/chart/ch_1").uri == "analytics://api.example.com/chart/ch_1"


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
