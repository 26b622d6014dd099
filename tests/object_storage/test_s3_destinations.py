"""Reports and chart exports to S3 (moto's server over HTTP): straight into the final key, visible only when verified.

Every failure leaves the bucket as it was: no object, no open multipart upload. The failing reports are larger
than one upload part (8 MiB), so a multipart upload was really started and had to be aborted.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML ships no type information

from airflow_provider_analytics.definitions._export_files import definition_files
from airflow_provider_analytics.destinations._download import download_report_to
from airflow_provider_analytics.destinations._target import Destination, refuse_existing
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.charts import GetChartDataOperator
from airflow_provider_analytics.operators.definitions import ExportDefinitionsOperator
from airflow_provider_analytics.operators.errors import FinalFailure
from airflow_provider_analytics.operators.reports import DownloadReportOperator
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.version_compat import object_storage_paths_work
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.errors import AnalyticsInputError, DownloadIntegrityError
from tests.object_storage.conftest import BUCKET
from tests.support.context import make_context, retry_context
from tests.support.fixtures import make_config
from tests.support.reports import download_requests, ready_report
from tests.support.s3 import CONN_ID, objects, open_uploads

pytestmark = pytest.mark.skipif(
    not object_storage_paths_work(),
    reason="ObjectStoragePath refuses every protocol on Airflow 3.0 with universal-pathlib 0.3",
)
MIB = 1024 * 1024


def body_of(s3: Any, key: str) -> bytes:
    return bytes(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())


def big_report(hook: AnalyticsHook, sandbox: SandboxServer) -> dict[str, Any]:
    """A CSV report of about 20 MiB: two and a half upload parts."""
    report = ready_report(hook, sandbox, format="csv", name="big", parameters={"rows": 480_000})
    assert report["size_bytes"] > 2 * 8 * MIB, report["size_bytes"]
    return report


def assert_left_nothing(s3: Any, before: dict[str, int]) -> None:
    assert objects(s3, BUCKET) == before
    assert open_uploads(s3, BUCKET) == []


@pytest.fixture
def s3_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every S3 API operation s3fs sends from now on, by name (``list_objects_v2``, ``head_object``, ...).

    s3fs sends each one through ``S3FileSystem._call_s3`` (its upload's file object through ``call_s3``, the
    blocking wrapper of the original), so those two are counted.
    """
    from s3fs import S3FileSystem  # type: ignore[import-untyped]  # s3fs ships no type information

    calls: list[str] = []
    send, send_blocking = S3FileSystem._call_s3, S3FileSystem.call_s3

    async def counted(self: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(method)
        return await send(self, method, *args, **kwargs)

    def counted_blocking(self: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(method)
        return send_blocking(self, method, *args, **kwargs)

    monkeypatch.setattr(S3FileSystem, "_call_s3", counted)
    monkeypatch.setattr(S3FileSystem, "call_s3", counted_blocking)
    return calls


@pytest.mark.parametrize("uri", ["s3://exports/daily/", f"s3://{CONN_ID}@exports/daily/"], ids=["bare", "conn_id"])
def test_folder_that_holds_other_objects(hook: AnalyticsHook, sandbox: SandboxServer, s3: Any, uri: str) -> None:
    s3.put_object(Bucket=BUCKET, Key="daily/other.csv", Body=b"a,b\n")
    report = big_report(hook, sandbox)

    result = hook.download_report(report["id"], uri)

    assert result.uri == f"{uri}big.csv"
    assert objects(s3, BUCKET) == {"daily/other.csv": 4, "daily/big.csv": report["size_bytes"]}
    assert hashlib.sha256(body_of(s3, "daily/big.csv")).hexdigest() == report["sha256"] == result.sha256
    assert open_uploads(s3, BUCKET) == []


@pytest.mark.parametrize("uri", ["s3://exports/one.pdf", f"s3://{CONN_ID}@exports/one.pdf"], ids=["bare", "conn_id"])
def test_small_file_to_a_key(hook: AnalyticsHook, sandbox: SandboxServer, s3: Any, uri: str) -> None:
    report = ready_report(hook, sandbox)

    result = hook.download_report(report["id"], uri)

    assert result.uri == uri
    assert hashlib.sha256(body_of(s3, "one.pdf")).hexdigest() == report["sha256"]
    assert objects(s3, BUCKET) == {"one.pdf": report["size_bytes"]}


def test_existing_key_is_refused_before_any_request(hook: AnalyticsHook, sandbox: SandboxServer, s3: Any) -> None:
    report = ready_report(hook, sandbox)
    s3.put_object(Bucket=BUCKET, Key="daily/sales.pdf", Body=b"old")

    with pytest.raises(AnalyticsInputError, match="already exists: pass overwrite=True"):
        hook.download_report(report["id"], "s3://exports/daily/sales.pdf")

    assert download_requests(sandbox) == []
    assert body_of(s3, "daily/sales.pdf") == b"old"


@pytest.mark.parametrize("folder", [False, True], ids=["key", "folder"])
def test_overwrite_replaces_the_object(hook: AnalyticsHook, sandbox: SandboxServer, s3: Any, folder: bool) -> None:
    report = big_report(hook, sandbox)
    s3.put_object(Bucket=BUCKET, Key="daily/big.csv", Body=b"old")
    s3.put_object(Bucket=BUCKET, Key="daily/neighbour.csv", Body=b"n")

    hook.download_report(report["id"], "s3://exports/daily/" + ("" if folder else "big.csv"), overwrite=True)

    assert hashlib.sha256(body_of(s3, "daily/big.csv")).hexdigest() == report["sha256"]
    assert objects(s3, BUCKET) == {"daily/big.csv": report["size_bytes"], "daily/neighbour.csv": 1}
    assert open_uploads(s3, BUCKET) == []


def test_a_key_that_appeared_after_the_parse_is_refused(hook: AnalyticsHook, sandbox: SandboxServer, s3: Any) -> None:
    # DownloadReportOperator parses and checks before it waits, then hands its parsed Destination to the hook,
    # which must check again: an upload completes over any object.
    report = ready_report(hook, sandbox)
    where = Destination.parse("s3://exports/daily/late.pdf")
    refuse_existing(where.path, overwrite=False)
    s3.put_object(Bucket=BUCKET, Key="daily/late.pdf", Body=b"written while the task waited")

    with pytest.raises(AnalyticsInputError, match="already exists: pass overwrite=True"):
        hook.download_report(report["id"], where)

    assert download_requests(sandbox) == []
    assert body_of(s3, "daily/late.pdf") == b"written while the task waited"


def test_the_operator_asks_the_store_about_its_destination_once(
    hook: AnalyticsHook, sandbox: SandboxServer, s3: Any, s3_calls: list[str]
) -> None:
    report = ready_report(hook, sandbox)
    hook.download_report(report["id"], "s3://exports/warm-up.pdf")  # s3fs makes its session and client once
    uri = "s3://exports/daily/sales.pdf"
    s3_calls.clear()
    where = Destination.parse(uri)  # head_bucket: is the bucket there? is_dir(): may the key name a folder?
    parse = len(s3_calls)
    s3_calls.clear()
    refuse_existing(where.path, overwrite=False)  # exists()
    check = len(s3_calls)
    s3_calls.clear()

    DownloadReportOperator(task_id="t", report_id=report["id"], destination=uri).execute(make_context())

    # One parse, the check before the wait, the check right before the upload (the one that sees a key that
    # appeared meanwhile), one PUT. With s3fs 2026.9 that is 2 + 2 + 2 + 1 = 7 calls; parsing again in the hook
    # made it 9.
    assert (parse, s3_calls[-1:]) == (2, ["put_object"])
    assert len(s3_calls) == parse + 2 * check + 1, s3_calls
    assert body_of(s3, "daily/sales.pdf")[:4] == b"%PDF"


def test_a_retry_keeps_the_object_its_lost_try_uploaded(
    hook: AnalyticsHook, sandbox: SandboxServer, s3: Any, s3_calls: list[str]
) -> None:
    # Try 1 completed the upload and was lost before it could report it: try 2 reads the object back (its size,
    # then its bytes for the sha-256) and reports it, uploading and downloading nothing.
    report = ready_report(hook, sandbox)
    uri = "s3://exports/daily/sales.pdf"
    DownloadReportOperator(task_id="t", report_id=report["id"], destination=uri).execute(make_context())
    downloads = len(download_requests(sandbox))
    s3_calls.clear()
    retry = retry_context(2)

    assert DownloadReportOperator(task_id="t", report_id=report["id"], destination=uri).execute(retry) == uri

    assert not {"put_object", "create_multipart_upload"} & set(s3_calls), s3_calls
    assert len(download_requests(sandbox)) == downloads
    assert (
        retry["ti"].xcom["download"]["sha256"]
        == report["sha256"]
        == hashlib.sha256(body_of(s3, "daily/sales.pdf")).hexdigest()
    )


def test_existing_key_in_a_folder_is_refused_without_writing(
    hook: AnalyticsHook, sandbox: SandboxServer, s3: Any
) -> None:
    report = big_report(hook, sandbox)
    s3.put_object(Bucket=BUCKET, Key="daily/big.csv", Body=b"old")

    with pytest.raises(AnalyticsInputError, match="already exists"):
        hook.download_report(report["id"], "s3://exports/daily/")

    assert_left_nothing(s3, {"daily/big.csv": 3})


def test_wrong_digest_leaves_nothing(hook: AnalyticsHook, sandbox: SandboxServer, s3: Any) -> None:
    report = big_report(hook, sandbox)
    sandbox.state.inject(Fault.bad_digest())

    with pytest.raises(DownloadIntegrityError, match="does not match Repr-Digest"):
        hook.download_report(report["id"], "s3://exports/daily/")

    assert_left_nothing(s3, {})


def test_digest_other_than_the_reports_sha256_leaves_nothing(
    hook: AnalyticsHook, sandbox: SandboxServer, s3: Any
) -> None:
    report = big_report(hook, sandbox)

    with pytest.raises(DownloadIntegrityError, match="report's sha256"):
        hook.download_report(report["id"], "s3://exports/x.csv", report={**report, "sha256": "0" * 64})

    assert_left_nothing(s3, {})


def test_oversized_body_leaves_nothing(hook: AnalyticsHook, sandbox: SandboxServer, s3: Any) -> None:
    report = big_report(hook, sandbox)

    with (
        AnalyticsClient(make_config(sandbox, max_download_bytes=8 * MIB)) as client,
        pytest.raises(DownloadIntegrityError, match="over the 8388608 allowed"),
    ):
        download_report_to(client, report["id"], "s3://exports/daily/")

    assert_left_nothing(s3, {})


def test_body_longer_than_the_report_leaves_nothing(hook: AnalyticsHook, sandbox: SandboxServer, s3: Any) -> None:
    report = big_report(hook, sandbox)
    headers = {"Content-Type": "text/csv", "Content-Disposition": 'attachment; filename="big.csv"'}
    size = report["size_bytes"] + 4 * MIB  # the platform's answer is longer than the report it described
    sandbox.state.inject(
        Fault.stream(headers=headers, chunk=b"x" * 65536, chunk_count=size // 65536, path="/download$")
    )

    with pytest.raises(DownloadIntegrityError):
        hook.download_report(report["id"], "s3://exports/daily/", report=report)

    assert_left_nothing(s3, {})


def test_connection_lost_for_good_leaves_nothing(hook: AnalyticsHook, sandbox: SandboxServer, s3: Any) -> None:
    report = big_report(hook, sandbox)
    sandbox.state.inject(Fault.truncate(at_bytes=12 * MIB, times=1))
    sandbox.state.inject(Fault.truncate(at_bytes=1 * MIB, times=3))  # every resume is cut too

    with pytest.raises(DownloadIntegrityError, match="connection lost"):
        hook.download_report(report["id"], "s3://exports/daily/")

    assert_left_nothing(s3, {})


def test_connection_lost_once_is_resumed_into_the_same_upload(
    hook: AnalyticsHook, sandbox: SandboxServer, s3: Any
) -> None:
    report = big_report(hook, sandbox)
    sandbox.state.inject(Fault.truncate(at_bytes=12 * MIB))

    result = hook.download_report(report["id"], "s3://exports/daily/")

    assert [entry.headers.get("range") for entry in download_requests(sandbox)] == [None, f"bytes={12 * MIB}-"]
    assert hashlib.sha256(body_of(s3, "daily/big.csv")).hexdigest() == report["sha256"] == result.sha256
    assert open_uploads(s3, BUCKET) == []


@pytest.mark.parametrize(
    ("uri", "needs"),
    [
        ("gs://exports/daily/", "apache-airflow-providers-google gcsfs"),
        ("abfs://exports/daily/r.pdf", "apache-airflow-providers-microsoft-azure adlfs"),
    ],
)
def test_scheme_without_a_filesystem_fails_before_any_request(
    hook: AnalyticsHook, sandbox: SandboxServer, uri: str, needs: str
) -> None:
    report = ready_report(hook, sandbox)
    before = len(sandbox.state.requests)

    with pytest.raises(AnalyticsInputError, match=f"destinations need .*pip install {needs}"):
        hook.download_report(report["id"], uri)

    assert sandbox.state.requests[before:] == []


def test_chart_export_streams_to_s3(sandbox: SandboxServer, s3: Any) -> None:
    s3.put_object(Bucket=BUCKET, Key="charts/other.csv", Body=b"x")
    op = GetChartDataOperator(task_id="t", chart_id="ch_revenue", destination=f"s3://{CONN_ID}@exports/charts/rows.csv")

    result = op.execute(make_context())

    lines = body_of(s3, "charts/rows.csv").decode().splitlines()
    assert result["uri"] == f"s3://{CONN_ID}@exports/charts/rows.csv"
    assert len(lines) == result["rows"] + 1
    assert lines[0] == ",".join(column["name"] for column in result["columns"])
    assert sorted(objects(s3, BUCKET)) == ["charts/other.csv", "charts/rows.csv"]


def test_definitions_export_to_s3_plans_unchanged_and_names_stale_objects(
    hook: AnalyticsHook, sandbox: SandboxServer, s3: Any
) -> None:
    [earlier] = definition_files({"workflows": [{"name": "gone", "description": "", "configuration": {}}]}, "object")
    s3.put_object(Bucket=BUCKET, Key=f"defs/{earlier.path}", Body=earlier.data)  # an earlier export's, gone since
    destination = f"s3://{CONN_ID}@exports/defs/"
    op = ExportDefinitionsOperator(task_id="export", destination=destination, split_by="object", kinds=["workflows"])

    result = op.execute(make_context())

    keys = sorted(key for key in objects(s3, BUCKET) if key != "defs/workflows/gone.yaml")
    uris = {f"s3://{CONN_ID}@exports/{key}" for key in keys}
    assert result["files_written"] == len(keys) == result["counts"]["workflows"] > 0
    assert set(result["files"]) <= uris
    assert len(result["files"]) == min(len(keys), 20)  # XCom names the first twenty files only
    assert result["stale"] == [f"s3://{CONN_ID}@exports/defs/workflows/gone.yaml"]
    assert result["stale_found"] == 1
    assert open_uploads(s3, BUCKET) == []
    exported = {"workflows": [yaml.safe_load(body_of(s3, key))["workflows"][0] for key in keys]}
    assert hook.plan_definitions(exported).counts["unchanged"] == len(keys)


def test_a_report_destination_whose_bucket_is_missing_fails_before_the_report_is_waited_for(
    sandbox: SandboxServer, s3: Any
) -> None:
    operator = DownloadReportOperator(
        task_id="download", report_id="rp_missing_bucket", destination=f"s3://{CONN_ID}@no-such-bucket/reports/"
    )

    with pytest.raises(FinalFailure, match="the bucket 'no-such-bucket' does not exist"):
        operator.execute(make_context())

    assert sandbox.state.requests == []
