"""Paths that cannot work are refused before any request, typed (not retried), against the sandbox: a NUL in a
definitions path or glob, or in an export's destination (``ValueError: embedded null byte`` before), and, in the
destination, a folder where the export writes a file (``charts.yaml/``) or a file where it writes a folder (found
only when writing, after the listings and with a file already written)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.definitions import ExportDefinitionsOperator
from airflow_provider_analytics.operators.errors import FinalFailure
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.definitions.test_bad_definitions import refused
from tests.definitions.test_export_files import add_workflow, export, files_under
from tests.support.context import make_context


@pytest.mark.parametrize("path", ["defs/a\x00b.yaml", "defs/a\x00b/*.yaml", ["ok.yaml", "x\x00.json"]])
def test_a_definitions_path_holding_nul_is_refused_before_any_request(
    hook: AnalyticsHook, empty: SandboxServer, tmp_path: Path, path: str | list[str]
) -> None:
    (tmp_path / "ok.yaml").write_text("workflows: []\n", encoding="utf-8")
    source = [str(tmp_path / item) for item in path] if isinstance(path, list) else str(tmp_path / path)

    problems = refused(hook, empty, source)

    assert [problem for problem in problems if "NUL" in problem] == [
        f"{'definitions[1]' if isinstance(path, list) else 'definitions'}: a path holds a NUL character (\\x00),"
        " which no file's path can; remove it"
    ]


def test_an_export_destination_holding_nul_is_refused_before_any_request(empty: SandboxServer, tmp_path: Path) -> None:
    operator = ExportDefinitionsOperator(task_id="export", destination=f"{tmp_path}/a\x00b/", retries=3)

    with pytest.raises(FinalFailure, match=r"destination holds a NUL character \(\\x00\), which no path or URI can"):
        operator.execute(make_context())

    assert empty.state.requests == []


@pytest.mark.parametrize("destination", ["{tmp}/exports-\ud800/", "s3://bucket/\udfff/"])
def test_an_export_destination_holding_half_a_utf16_pair_is_refused_before_any_request(
    empty: SandboxServer, tmp_path: Path, destination: str
) -> None:
    """What a run conf holding "\\ud800" renders to: the OS raised UnicodeEncodeError as the folder was made."""
    operator = ExportDefinitionsOperator(task_id="export", destination=destination.format(tmp=tmp_path), retries=3)

    with pytest.raises(FinalFailure, match=r"half of a UTF-16 pair that no path or URI can hold"):
        operator.execute(make_context())

    assert empty.state.requests == []


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_folder_where_the_export_writes_a_file_is_refused_before_any_request(
    empty: SandboxServer, tmp_path: Path, overwrite: bool
) -> None:
    add_workflow(empty, "wf_1", "nightly")
    (tmp_path / "workflows.yaml").mkdir()

    with pytest.raises(FinalFailure) as raised:
        export(tmp_path, overwrite=overwrite)

    assert f"{tmp_path}/workflows.yaml (a folder): the export writes the file of that name (split_by='kind')" in str(
        raised.value
    )
    assert empty.state.requests == []
    assert files_under(tmp_path) == {}  # before: data_sources.yaml and charts.yaml were written, then it failed


def test_a_file_where_the_export_writes_a_folder_is_refused_before_any_request(
    empty: SandboxServer, tmp_path: Path
) -> None:
    add_workflow(empty, "wf_1", "nightly")
    (tmp_path / "workflows").write_text("notes\n", encoding="utf-8")

    with pytest.raises(FinalFailure, match=r"workflows \(a file\): the export writes files into the folder of that"):
        export(tmp_path, split_by="object", overwrite=True)

    assert empty.state.requests == []
    assert export(tmp_path)["files_written"] == 4  # the other layout writes beside it
