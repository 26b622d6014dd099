"""An export of definitions to S3 (moto's server over HTTP) keeps the rules it keeps on disk: a visible file for
every name, files no export wrote named and kept unless ``overwrite=True``, and the other layout's files stale."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML ships no type information

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.definitions import ExportDefinitionsOperator
from airflow_provider_analytics.operators.errors import FinalFailure
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.version_compat import object_storage_paths_work
from tests.definitions.helpers import sent
from tests.definitions.test_export_files import add_workflow
from tests.object_storage.conftest import BUCKET
from tests.support.context import make_context
from tests.support.probes import printed_result
from tests.support.s3 import CONN_ID, objects, open_uploads

pytestmark = pytest.mark.skipif(
    not object_storage_paths_work(),
    reason="ObjectStoragePath refuses every protocol on Airflow 3.0 with universal-pathlib 0.3",
)
DESTINATION = f"s3://{CONN_ID}@exports/defs/"


def export(**kwargs: Any) -> dict[str, Any]:
    result: dict[str, Any] = ExportDefinitionsOperator(
        task_id="export", destination=DESTINATION, kinds=["workflows"], **kwargs
    ).execute(make_context())
    return result


def test_a_name_without_an_ascii_letter_or_digit_gets_a_visible_key_that_plans_as_unchanged(
    hook: AnalyticsHook, sandbox: SandboxServer, s3: Any
) -> None:
    add_workflow(sandbox, "wf_sales_jp", "売上")

    result = export(split_by="object")

    keys = sorted(objects(s3, BUCKET))
    assert "defs/workflows/.yaml" not in keys
    assert all(not key.rsplit("/", 1)[1].startswith(".") for key in keys)
    assert len(keys) == result["files_written"]
    bodies = [s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() for key in keys]
    exported = {"workflows": [yaml.safe_load(body)["workflows"][0] for body in bodies]}
    assert "売上" in [workflow["name"] for workflow in exported["workflows"]]
    assert hook.plan_definitions(exported).counts["unchanged"] == len(keys)


def test_a_hand_written_object_is_named_and_kept_unless_overwrite(sandbox: SandboxServer, s3: Any) -> None:
    mine = b"workflows:\n  - {name: mine, configuration: {}}\n"
    s3.put_object(Bucket=BUCKET, Key="defs/workflows.yaml", Body=mine)
    before = len(sandbox.state.requests)

    with pytest.raises(FinalFailure, match=r"defs/workflows.yaml \(not written by an export\)"):
        export()

    assert sent(sandbox, before) == []
    assert s3.get_object(Bucket=BUCKET, Key="defs/workflows.yaml")["Body"].read() == mine
    export(overwrite=True)
    assert s3.get_object(Bucket=BUCKET, Key="defs/workflows.yaml")["Body"].read() != mine
    assert open_uploads(s3, BUCKET) == []


def test_the_files_of_the_other_layout_are_stale(sandbox: SandboxServer, s3: Any) -> None:
    by_kind = export()

    by_object = export(split_by="object")

    assert by_kind["files"] == [f"{DESTINATION}workflows.yaml"]
    assert by_object["stale"] == by_kind["files"]


def test_a_destination_whose_bucket_is_missing_is_refused_before_any_request(sandbox: SandboxServer, s3: Any) -> None:
    operator = ExportDefinitionsOperator(task_id="export", destination=f"s3://{CONN_ID}@no-such-bucket/defs/")

    with pytest.raises(FinalFailure, match="the bucket 'no-such-bucket' does not exist: create it, or correct"):
        operator.execute(make_context())

    assert sandbox.state.requests == []  # before: the four listings, then a failed write
    assert "no-such-bucket" not in [bucket["Name"] for bucket in s3.list_buckets()["Buckets"]]


_NO_CREDENTIALS_PROBE = """
import json, sys
from airflow_provider_analytics.operators.definitions import ExportDefinitionsOperator
from airflow_provider_analytics.operators.errors import FinalFailure
from tests.support.context import make_context
from tests.support.probes import printed_result

try:
    ExportDefinitionsOperator(task_id="export", destination=sys.argv[1], retries=3).execute(make_context())
    print("RESULT " + json.dumps({"raised": None}))
except FinalFailure as error:
    print("RESULT " + json.dumps({"raised": "FinalFailure", "message": str(error)}))
"""


def test_a_destination_without_credentials_is_refused_before_any_request(
    sandbox: SandboxServer, s3: Any, moto_server: Any
) -> None:
    # No connection in the destination and no key in the environment: botocore's NoCredentialsError, untyped, was
    # retried by Airflow as if the store might find a key next time. In a process of its own: Airflow keeps the
    # first store a process opens for s3:// (this one's has the session's key).
    env = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    env |= {"AWS_ENDPOINT_URL_S3": moto_server.url, "AWS_EC2_METADATA_DISABLED": "true",  # no instance role
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull, "AWS_CONFIG_FILE": os.devnull}  # fmt: skip
    argv = [sys.executable, "-c", _NO_CREDENTIALS_PROBE, f"s3://{BUCKET}/defs/"]
    completed = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)

    assert completed.returncode == 0, completed.stderr
    result = printed_result(completed.stdout)
    if result["raised"] is None and objects(s3, BUCKET):  # written: this filesystem went anonymous
        pytest.skip(
            "the amazon provider of this release goes anonymous when it finds no key (no NoCredentialsError to"
            " type), and moto takes unsigned requests (S3 itself refuses them: 403)"
        )
    assert result["raised"] == "FinalFailure", result
    assert "found no credentials to use, and a retry would find none" in result["message"]
    assert sandbox.state.requests == []
    assert not objects(s3, BUCKET)
