"""The analytics:// asset URI: Airflow's Asset uses our normaliser, OpenLineage our converter, and both name
an object as the operators' lineage does."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from airflow.providers.common.compat.openlineage.utils.utils import translate_airflow_asset
from airflow.providers.common.compat.sdk import Asset

from airflow_provider_analytics.lineage.uris import (
    KINDS,
    build_uri,
    convert_asset_to_openlineage,
    file_dataset_parts,
    host_of,
    normalize_uri,
    parse_uri,
)
from airflow_provider_analytics.provider_info import get_provider_info
from tests.support.airflow_runs import STRICT_ASSET_URIS_ENV, needs_airflow
from tests.support.releases import ASSET_URIS_KEY


@pytest.mark.parametrize(
    ("given", "normalised"),
    [
        ("analytics://API.Example.COM/dashboard/db_sales", "analytics://api.example.com/dashboard/db_sales"),
        ("ANALYTICS://h:8443/chart/ch_1/", "analytics://h:8443/chart/ch_1"),
        ("analytics://h/report/rp_1#frag", "analytics://h/report/rp_1"),
        ("analytics://[::1]:9/workflow/wf-1", "analytics://[::1]:9/workflow/wf-1"),
        ("analytics://h/data_source/ds_warehouse", "analytics://h/data_source/ds_warehouse"),
    ],
)
def test_assets_are_normalised(given: str, normalised: str) -> None:
    assert Asset(given).uri == normalised


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("analytics://h/widget/w_1", "unknown analytics asset kind 'widget': use one of data_source, chart"),
        ("analytics://h/charts/ch_1", "unknown analytics asset kind 'charts'"),
        ("analytics://h/chart/ch.1", "bad analytics chart id 'ch.1'"),
        ("analytics://h/chart/" + "x" * 65, "ids are 1-64 characters"),
        ("analytics:///chart/ch_1", "has no host"),
        ("analytics://h/chart", "the path must be /<kind>/<id>"),
        ("analytics://h/chart/ch_1/data", "the path must be /<kind>/<id>"),
        ("analytics://h/workflow/wf_1?x=1", "no query or fragment"),
        pytest.param(
            "analytics://user@h/chart/ch_1",
            "carries no user or password",
            marks=needs_airflow(
                "3.1",
                "refusing an asset URI with a user needs Airflow 3.1 (2.11 and 3.0 drop it with a warning first)",
            ),
        ),
        ("analytics://h:http/chart/ch_1", "bad port"),
    ],
)
def test_malformed_uris_are_refused_with_what_to_change(
    uri: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in STRICT_ASSET_URIS_ENV.items():  # Airflow 2.11 only warns unless told to refuse
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError) as raised:  # noqa: PT011 - the message is checked below, as a plain substring
        Asset(uri)
    assert message in str(raised.value)


def test_normaliser_is_idempotent_and_keeps_the_port() -> None:
    once = normalize_uri(urlsplit("analytics://Host:8080/chart/ch_1"))
    assert once.geturl() == "analytics://host:8080/chart/ch_1"
    assert normalize_uri(once) == once


def test_the_build_and_parse_round_trip() -> None:
    for kind in KINDS:
        uri = build_uri("Platform.Example.com", kind, "x_1")
        assert uri == f"analytics://platform.example.com/{kind}/x_1"
        assert parse_uri(uri).uri == uri


def test_host_of_a_connection_base_url() -> None:
    assert host_of("https://API.example.com/prefix") == "api.example.com"
    assert host_of("http://127.0.0.1:8765") == "127.0.0.1:8765"
    assert host_of("https://user:pw@h.example:443/") == "h.example:443"
    with pytest.raises(ValueError, match="has no host"):
        host_of("/just/a/path")


def test_converter_names_the_dataset_like_the_operators() -> None:
    dataset = convert_asset_to_openlineage(Asset("analytics://API.example.com/chart/ch_revenue"), None)
    assert (dataset.namespace, dataset.name) == ("analytics://api.example.com", "chart/ch_revenue")


def test_openlineage_provider_finds_the_converter_through_the_provider_info() -> None:
    dataset = translate_airflow_asset(Asset("analytics://h.example:8443/report/rp_1"), None)
    assert dataset is not None
    assert (dataset.namespace, dataset.name) == ("analytics://h.example:8443", "report/rp_1")


def test_provider_info_registers_the_scheme() -> None:
    (entry,) = get_provider_info()[ASSET_URIS_KEY]  # "dataset-uris" on Airflow 2
    assert entry == {
        "schemes": ["analytics"],
        "handler": "airflow_provider_analytics.lineage.uris.normalize_uri",
        "to_openlineage_converter": "airflow_provider_analytics.lineage.uris.convert_asset_to_openlineage",
    }


@pytest.mark.parametrize(
    ("uri", "parts"),
    [
        ("/data/out/r.pdf", ("file", "/data/out/r.pdf")),
        ("file:///data/out/r.pdf", ("file", "/data/out/r.pdf")),
        ("s3://exports/sales/2026/r.csv", ("s3://exports", "sales/2026/r.csv")),
        ("gs://bucket/r.csv", ("gs://bucket", "r.csv")),
    ],
)
def test_written_files_follow_openlineage_naming(uri: str, parts: tuple[str, str]) -> None:
    assert file_dataset_parts(uri) == parts
    if uri.startswith(("/", "file:")):  # Airflow's own file converter agrees
        converted = translate_airflow_asset(Asset(uri=f"file://{parts[1]}"), None)
        assert converted is not None
        assert (converted.namespace, converted.name) == parts
