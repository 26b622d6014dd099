"""What an export writes is what an apply reads, into a folder it does not take over: against the sandbox, on disk.

Tried as a new user would, an export used to: write an object named without an ASCII letter or digit (``売上``) to
``workflows/.yaml``, which ``*.yaml`` skips, so the re-plan listed it as not managed; report success for a
``workflows.yaml`` of 12 MB that the apply's reader refuses (over 10 MiB), having checked the mapping in memory, not
the file; follow a ``workflows`` folder that is a link, so the files landed outside the destination while XCom named
its path; replace a hand-written ``charts.yaml`` without a word; and, split by object into the same folder, name no
stale file though the top-level ``charts.yaml`` now defined every chart twice.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.definitions import ExportDefinitionsOperator
from airflow_provider_analytics.operators.errors import FinalFailure
from airflow_provider_analytics.sandbox.domain.records import WorkflowRecord
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.definitions.helpers import READS, definitions, logged, sent, workspace
from tests.support.context import make_context

MIB = 1024 * 1024


def add_workflow(sandbox: SandboxServer, ident: str, name: str, configuration: dict[str, Any] | None = None) -> None:
    with sandbox.state.lock:
        now = sandbox.state.now()
        record = WorkflowRecord(ident, name, "", configuration or {"steps": []}, now, now)
        workspace(sandbox).workflows[ident] = record


def export(folder: Path, **kwargs: Any) -> dict[str, Any]:
    result: dict[str, Any] = ExportDefinitionsOperator(
        task_id="export", destination=f"{folder}/", retries=3, **kwargs
    ).execute(make_context())
    return result


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.mark.parametrize("name", ["売上", "!!!", "🙂", "—"])
def test_a_name_without_an_ascii_letter_or_digit_gets_a_visible_file_that_plans_as_unchanged(
    hook: AnalyticsHook, empty: SandboxServer, tmp_path: Path, name: str
) -> None:
    add_workflow(empty, "wf_nameless", name)
    add_workflow(empty, "wf_plain", "plain")

    result = export(tmp_path, split_by="object", kinds=["workflows"])

    files = sorted(Path(path).name for path in result["files"])
    assert len(files) == 2
    assert "plain.yaml" in files
    [nameless] = [file for file in files if file != "plain.yaml"]
    assert not nameless.startswith(".")
    again = export(tmp_path, split_by="object", kinds=["workflows"])  # the same name, the same file
    assert (again["files"], again["stale"]) == (result["files"], [])
    plan = hook.plan_definitions(str(tmp_path / "*" / "*.yaml"))
    assert {(change.name, change.action) for change in plan.changes} == {
        (name, "unchanged"),
        ("plain", "unchanged"),
    }


def test_a_file_the_apply_would_refuse_as_too_large_fails_the_export_and_nothing_is_written(
    hook: AnalyticsHook, empty: SandboxServer, tmp_path: Path
) -> None:
    # 12.5 MB in all, in pages under the answers' 3 MiB; of a character no secret the masker knows begins with,
    # so that the export's plan of its own definitions scans the text at once however many a process remembers
    for number in range(500):
        add_workflow(empty, f"wf_big_{number:03}", f"big-{number:03}", {"script": "~" * 25_000})

    with pytest.raises(FinalFailure) as raised:
        export(tmp_path, kinds=["workflows"])

    assert str(raised.value).splitlines()[:2] == [
        "The exported files have 1 problem; none was written; to fix it, export with split_by='object' (a file per"
        " object), or fewer objects at a time (kinds=, names=):",
        "  - workflows.yaml: is larger than 10 MiB; split it into several files",
    ]
    assert "not retried" in str(raised.value)
    assert files_under(tmp_path) == {}
    by_object = export(tmp_path, kinds=["workflows"], split_by="object")  # what the message says to do
    assert by_object["files_written"] == 500
    assert hook.plan_definitions(str(tmp_path / "workflows" / "*.yaml")).counts["unchanged"] == 500


def test_a_section_folder_that_is_a_link_is_refused_before_any_request(empty: SandboxServer, tmp_path: Path) -> None:
    destination, elsewhere = tmp_path / "export", tmp_path / "elsewhere"
    destination.mkdir()
    elsewhere.mkdir()
    (destination / "workflows").symlink_to(elsewhere)
    add_workflow(empty, "wf_one", "one")

    with pytest.raises(FinalFailure) as raised:
        export(destination, split_by="object")

    assert f"{destination}/workflows: is a link, and the export does not follow links inside its destination" in str(
        raised.value
    )
    assert sent(empty) == []
    assert list(elsewhere.iterdir()) == []


def test_a_link_planted_after_the_look_at_the_folder_is_not_followed_either(
    empty: SandboxServer, tmp_path: Path
) -> None:
    from airflow_provider_analytics.destinations._export_folder import write_beneath

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "workflows").symlink_to(elsewhere)

    with pytest.raises(ValueError, match="workflows is a link: the export does not follow links"):
        write_beneath(tmp_path / "export", ["workflows", "one.yaml"], b"workflows: []\n")

    assert list(elsewhere.iterdir()) == []


def test_a_file_that_is_a_link_is_someone_else_s_and_replacing_it_replaces_the_link(
    hook: AnalyticsHook, empty: SandboxServer, tmp_path: Path
) -> None:
    hook.apply_plan(hook.plan_definitions(definitions()))
    destination, kept = tmp_path / "export", tmp_path / "kept.yaml"
    destination.mkdir()
    kept.write_text("workflows: []\n")
    (destination / "workflows.yaml").symlink_to(kept)

    with pytest.raises(FinalFailure, match=r"workflows.yaml \(a link\)"):
        export(destination)
    export(destination, overwrite=True)

    assert kept.read_text() == "workflows: []\n"
    assert not (destination / "workflows.yaml").is_symlink()


def test_a_hand_written_file_is_not_replaced_without_overwrite(
    hook: AnalyticsHook, empty: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: Any
) -> None:
    hook.apply_plan(hook.plan_definitions(definitions()))
    mine = "# my charts\ncharts:\n  - {name: Mine, type: bar, data_source: warehouse-v2, query: select 1}\n"
    (tmp_path / "charts.yaml").write_text(mine)
    before = len(empty.state.requests)

    with pytest.raises(FinalFailure) as raised:
        export(tmp_path)

    assert (
        f"destination {tmp_path} holds 1 file(s) of the exported sections that no export wrote, or that were edited"
        f" since: {tmp_path}/charts.yaml (not written by an export). The export would replace those of its own"
        " names, and an apply of the folder would read the others beside it: move them, or pass overwrite=True to"
        " replace them"
    ) in str(raised.value)
    assert sent(empty, before) == []
    assert (tmp_path / "charts.yaml").read_text() == mine
    result = export(tmp_path, overwrite=True)
    assert f"{tmp_path}/charts.yaml" in result["files"]
    assert "overwrite=True: replaced 1 file(s) that no export wrote or that were edited since" in logged(capsys, caplog)


def test_an_exported_file_edited_since_is_kept_unless_overwrite(
    hook: AnalyticsHook, empty: SandboxServer, tmp_path: Path
) -> None:
    hook.apply_plan(hook.plan_definitions(definitions()))
    export(tmp_path)
    before = files_under(tmp_path)
    assert export(tmp_path)["stale"] == []  # its own files, unedited: replaced by the same bytes
    assert files_under(tmp_path) == before
    edited = (tmp_path / "workflows.yaml").read_text().replace("enrich-sales", "enrich-sales-v2")
    (tmp_path / "workflows.yaml").write_text(edited)

    with pytest.raises(FinalFailure, match=r"workflows.yaml \(not written by an export\)"):
        export(tmp_path)

    assert (tmp_path / "workflows.yaml").read_text() == edited


def test_files_of_the_other_layout_are_stale(hook: AnalyticsHook, empty: SandboxServer, tmp_path: Path) -> None:
    hook.apply_plan(hook.plan_definitions(definitions()))
    by_kind = export(tmp_path)

    by_object = export(tmp_path, split_by="object")

    assert by_object["stale"] == sorted(by_kind["files"])
    assert by_object["stale_found"] == 4
    back = export(tmp_path)  # and back: the per-object files are stale now
    assert back["stale"] == sorted(by_object["files"])


def test_a_text_no_file_can_carry_fails_the_export_naming_the_object(empty: SandboxServer, tmp_path: Path) -> None:
    listed = {"id": "wf_half", "name": "half\ud800", "description": "", "configuration": {"note": "\udc00"}}
    body = json.dumps({"data": [listed], "next_cursor": None})  # "\ud800", as a platform's JSON may write it
    empty.state.inject(Fault.respond(200, headers={"Content-Type": "application/json"}, body=body, path="/workflows$"))

    with pytest.raises(FinalFailure) as raised:
        export(tmp_path, kinds=["workflows"])

    assert str(raised.value).splitlines()[:2] == [
        "The exported files have 1 problem; none was written:",
        "  - the platform's workflow 'half\\\\ud800': name: holds a lone UTF-16 surrogate (\\ud800 at character 5),"
        " which UTF-8 cannot encode: write the character it was half of, or remove it. No definitions file can"
        " carry it: change it on the platform, or leave the object out (names=, kinds=)",
    ]
    assert sent(empty) == READS
    assert files_under(tmp_path) == {}


@pytest.mark.parametrize("split_by", ["kind", "object"])
def test_texts_holding_line_breaks_yaml_reads_otherwise_are_exported_and_read_back_as_they_are(
    empty: SandboxServer, hook: AnalyticsHook, tmp_path: Path, split_by: str
) -> None:
    # PyYAML wrote U+0085 (NEL) raw inside a quoted text, where YAML 1.1 reads a line break, folded to a space: the
    # export failed with "please report this as a bug". It is written escaped now ("\N").
    texts = ["a\x85b", "\x85", "line\x85", "a\u2028b", "a\u2029b", "\x85 \n mixed 'quotes' \""]
    for index, text in enumerate(texts):
        add_workflow(empty, f"wf_{index}", f"nel-{index}", {"v": text, text: index})
        with empty.state.lock:
            workspace(empty).workflows[f"wf_{index}"].description = text

    export(tmp_path, kinds=["workflows"], split_by=split_by)

    plan = hook.plan_definitions(f"{tmp_path}/**/*.yaml" if split_by == "object" else f"{tmp_path}/*.yaml")
    assert {(change.name, change.action) for change in plan.changes} == {
        (f"nel-{index}", "unchanged") for index in range(len(texts))
    }


@pytest.mark.parametrize("number", [2**53, -(2**53) - 7, 12345678901234567890])
def test_an_integer_json_does_not_carry_exactly_fails_the_export_saying_what_to_change(
    empty: SandboxServer, tmp_path: Path, number: int
) -> None:
    add_workflow(empty, "wf_big", "big-number", {"limits": [{"rows": number}]})

    with pytest.raises(FinalFailure) as raised:
        export(tmp_path, kinds=["workflows"])

    message = str(raised.value)
    assert f"the platform's workflow 'big-number': configuration.limits[0].rows: is int {number}, beyond the" in message
    assert "store it as a string. No definitions file can carry it: change it on the platform" in message
    assert "report this as a bug" not in message
    assert files_under(tmp_path) == {}


def test_names_that_slug_alike_get_files_named_by_their_digest_the_same_at_every_export(
    empty: SandboxServer, tmp_path: Path
) -> None:
    for ident, name in (("wf_1", "Sales!"), ("wf_2", "sales?"), ("wf_3", "Sales")):
        add_workflow(empty, ident, name)

    first = export(tmp_path, split_by="object", kinds=["workflows"])
    add_workflow(empty, "wf_0", "SALES.")  # one more of the same slug, sorted first
    second = export(tmp_path, split_by="object", kinds=["workflows"])

    assert len(set(first["files"])) == 3
    assert set(first["files"]) < set(second["files"])  # each earlier name kept its file
    assert [os.path.basename(path).startswith("sales-") for path in second["files"]] == [True] * 4


def test_file_names_stay_apart_on_a_case_insensitive_disk_and_avoid_windows_device_names(
    empty: SandboxServer, hook: AnalyticsHook, tmp_path: Path
) -> None:
    add_workflow(empty, "wf_ABC", "Revenue")  # one name, ids that differ only in case
    add_workflow(empty, "wf_abc", "Revenue")
    add_workflow(empty, "wf_console", "CON")  # Windows opens the console for con.yaml, whatever the folder

    result = export(tmp_path, split_by="object", kinds=["workflows"])

    names = [path.rsplit("/", 1)[1] for path in result["files"]]
    assert len({name.casefold() for name in names}) == 3
    assert all(name == name.lower() for name in names)
    assert not any(name.split(".")[0] in ("con", "prn", "aux", "nul") for name in names)
    assert export(tmp_path, split_by="object", kinds=["workflows"])["files"] == result["files"]  # the same each time
    assert hook.plan_definitions(f"{tmp_path}/**/*.yaml").counts["unchanged"] == 3
