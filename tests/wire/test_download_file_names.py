"""The platform's file name is untrusted: it lands inside the folder, never hidden, portable (``safe_filename``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire._file_headers import safe_filename
from tests.support.reports import files_under, raw_download, ready_report


def test_traversal_name_lands_inside_the_folder(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox, name="../../etc/evil")
    folder = tmp_path / "a" / "b" / "inside"
    folder.mkdir(parents=True)
    assert "../../etc/evil" in raw_download(sandbox, report["id"]).headers["content-disposition"]

    result = hook.download_report(report["id"], str(folder) + "/")

    written = Path(result.uri)
    assert written.parent == folder
    assert written.name == "evil.pdf"
    assert files_under(tmp_path) == ["a/b/inside/evil.pdf"]
    assert not (tmp_path / "etc").exists()
    assert not (tmp_path / "a" / "etc").exists()


def test_hidden_name_does_not_become_a_dotfile(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox, name="..bashrc")
    result = hook.download_report(report["id"], str(tmp_path) + "/")
    assert Path(result.uri).parent == tmp_path
    assert not Path(result.uri).name.startswith(".")
    assert files_under(tmp_path) == [Path(result.uri).name]


def test_non_ascii_name_becomes_a_portable_name(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    report = ready_report(hook, sandbox, name="Umsätze")
    assert "filename*=UTF-8''Ums%C3%A4tze.pdf" in raw_download(sandbox, report["id"]).headers["content-disposition"]
    result = hook.download_report(report["id"], str(tmp_path) + "/")
    assert Path(result.uri).name == "Ums_tze.pdf"
    assert files_under(tmp_path) == ["Ums_tze.pdf"]


# --- safe_filename ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ('attachment; filename="report.pdf"', "report.pdf"),
        ("attachment; filename=report.pdf", "report.pdf"),
        ('attachment; filename="../../etc/passwd"', "passwd"),
        ('attachment; filename="/etc/passwd"', "passwd"),
        ('attachment; filename="..\\\\..\\\\windows\\\\win.ini"', "win.ini"),
        ('attachment; filename="C:\\\\temp\\\\x.csv"', "x.csv"),
        # filename* is percent-decoded and preferred; names are reduced to a portable ASCII set.
        ("attachment; filename*=UTF-8''Q1%20report%20(final).pdf", "Q1 report (final).pdf"),
        ("attachment; filename*=utf-8''Ums%C3%A4tze%20Q1.pdf", "Ums_tze Q1.pdf"),
        ("attachment; filename=\"fallback.pdf\"; filename*=UTF-8''%E2%82%AC%20rates.csv", "_ rates.csv"),
        ("attachment; filename*=UTF-8''rates.csv; filename=\"fallback.pdf\"", "rates.csv"),
        ("attachment; filename*=UTF-8''..%2F..%2Fetc%2Fshadow", "shadow"),
        ('attachment; filename=".bashrc"', "bashrc"),
        ('attachment; filename="...hidden.pdf"', "hidden.pdf"),
        ('attachment; filename="a\\"b.pdf"', "a_b.pdf"),
        ('attachment; filename="rm -rf $(x);`y`.csv"', "rm -rf _(x)_y_.csv"),
        ('attachment; filename="tab\there.pdf"', "tab_here.pdf"),
    ],
)
def test_safe_filename(header: str, expected: str) -> None:
    assert safe_filename(header) == expected


@pytest.mark.parametrize(
    "header",
    [None, "", "attachment", "inline", 'attachment; filename=""', 'attachment; filename=".."', 'filename="/"'],
)
def test_safe_filename_without_a_usable_name(header: str | None) -> None:
    assert safe_filename(header) is None


def test_safe_filename_never_leaves_a_separator_or_a_leading_dot() -> None:
    hostile = ["../", "..\\", "./.", "/..", "\\\\server\\share\\", "%2e%2e/", ". . /", "\x00/", "a/../../b/.c"]
    for left in hostile:
        for right in ("x", ".x", "..", " y.pdf"):
            for form in (f'attachment; filename="{left}{right}"', f"attachment; filename*=UTF-8''{left}{right}"):
                name = safe_filename(form)
                if name is None:
                    continue
                assert "/" not in name, (form, name)
                assert "\\" not in name, (form, name)
                assert not name.startswith("."), (form, name)
                assert name not in ("", ".", ".."), (form, name)
                assert "\x00" not in name


def test_safe_filename_caps_the_length() -> None:
    name = safe_filename(f'attachment; filename="{"a" * 1000}.pdf"')
    assert name is not None
    assert len(name) <= 255
